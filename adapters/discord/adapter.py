"""The Discord adapter on discord.py 2: one `Client` with the message-content intent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from adapters.base import (
    STOP_GRACE_SECONDS,
    Adapter,
    InFlight,
    MessageHandler,
    deadline_in,
    finish_by,
)
from adapters.discord.config import DiscordConfig
from adapters.discord.convert import PLATFORM
from adapters.discord.reading import EventReader
from adapters.discord.sending import send_text
from adapters.extras import require
from memory.clock import Clock, SystemClock
from memory.types import ChatKind, ChatMessage, InboundEvent

if TYPE_CHECKING:
    import discord

log = logging.getLogger(__name__)


class DiscordAdapter(Adapter):
    """Guild text channels, threads and DMs as chats; see `DiscordConfig`."""

    platform = PLATFORM

    def __init__(self, config: DiscordConfig, *, clock: Clock | None = None) -> None:
        self._discord = require("discord", "discord")
        self.config = config
        self._reader = EventReader(clock or SystemClock())  # when a member left: Discord does not say
        self._handler: MessageHandler | None = None
        self._client: discord.Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._in_flight = InFlight()  # discord.py runs each on_message in a task of its own

    @property
    def client(self) -> discord.Client:
        """The discord.py Client (after `start`)."""
        if self._client is None:
            raise RuntimeError("DiscordAdapter.start has not been called")
        return self._client

    async def start(self, handler: MessageHandler) -> None:
        """Log in and connect to the gateway; returns once READY (or raises the login error)."""
        discord = self._discord
        self._handler = handler
        # the member list is not needed: a member leaving or joining is told whether it is cached or not
        client = discord.Client(intents=self.intents(), chunk_guilds_at_startup=False)
        ready = asyncio.Event()

        async def on_ready() -> None:
            log.info("Discord bot %s (%s) ready", client.user, getattr(client.user, "id", "?"))
            ready.set()

        client.on_ready = on_ready
        self._listen(client)
        self._task = asyncio.ensure_future(client.start(self.config.token))
        ready_wait = asyncio.ensure_future(ready.wait())
        done, _ = await asyncio.wait(
            {ready_wait, self._task}, timeout=self.config.ready_timeout, return_when=asyncio.FIRST_COMPLETED
        )
        ready_wait.cancel()
        if self._task in done:
            self._task.result()  # login failed: raise it (e.g. LoginFailure, PrivilegedIntentsRequired)
        if not ready.is_set():
            await self.stop()
            raise TimeoutError(f"Discord did not become ready within {self.config.ready_timeout:g}s")

    def intents(self) -> discord.Intents:
        """The gateway intents asked for: the default ones (bans among them), Message Content, and
        Server Members with `members_intent` (both privileged: enable them in the Developer Portal
        too, or Discord refuses the connection)."""
        intents = self._discord.Intents.default()
        intents.message_content = True
        intents.members = self.config.members_intent  # members leaving, removed and joining
        return intents

    def _listen(self, client: discord.Client) -> None:
        """Take `client`'s messages, edits and deletions (any message, cached or not), and members
        leaving, removed from, banned from and joining its servers."""
        handlers = {
            "on_message": self._on_message,
            "on_raw_message_edit": self._on_raw_edit,
            "on_raw_message_delete": self._on_raw_delete,
            "on_raw_bulk_message_delete": self._on_raw_bulk_delete,
            "on_raw_member_remove": self._on_raw_member_remove,
            "on_member_join": self._on_member_join,
            "on_member_ban": self._on_member_ban,
        }
        for event, handler in handlers.items():
            setattr(client, event, handler)
        self._client = client

    async def stop(self, within: float = STOP_GRACE_SECONDS) -> None:
        """Let the messages being handled finish, then disconnect and close the client, all within
        `within` seconds (Discord does not deliver a message again; a close the gateway does not
        answer by then is cancelled, and the connection dropped)."""
        deadline = deadline_in(within)
        await self._in_flight.drained(within)
        if self._client is not None:
            await finish_by(deadline, asyncio.ensure_future(self._client.close()))
        if self._task is not None:
            await finish_by(deadline, self._task)
            self._task = None

    async def _on_message(self, message: Any, edited: bool = False) -> None:
        await self._deliver(self._reader.message(self.client, message, edited=edited))

    async def _on_raw_edit(self, payload: Any) -> None:
        await self._deliver(self._reader.edit(self.client, payload))

    async def _on_raw_delete(self, payload: Any) -> None:
        await self._deliver(self._reader.deletion(payload))

    async def _on_raw_bulk_delete(self, payload: Any) -> None:
        await self._deliver(self._reader.bulk_deletion(payload))

    async def _on_raw_member_remove(self, payload: Any) -> None:
        await self._deliver(self._reader.member_removed(self.client, payload))

    async def _on_member_ban(self, guild: Any, user: Any) -> None:
        await self._deliver(self._reader.member_banned(self.client, guild, user))

    async def _on_member_join(self, member: Any) -> None:
        await self._deliver(self._reader.member_joined(self.client, member))

    async def _deliver(self, events: Iterable[InboundEvent]) -> None:
        for event in events:
            if self._handler is not None:
                with self._in_flight.handling():
                    await self._handler(event)

    async def send_text(
        self,
        chat_id: str,
        text: str,
        *,
        chat_kind: ChatKind = ChatKind.GROUP,
        reply_to: str | None = None,
    ) -> ChatMessage:
        """Send `text` to a channel, thread or DM channel (adapters.discord.sending.send_text: cut to
        fit, no @everyone or role pings); `SendError` when Discord refused it."""
        return await send_text(self.client, chat_id, text, reply_to=reply_to)
