"""The Discord adapter on discord.py 2: one `Client` with the message-content intent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from adapters.base import (
    STOP_GRACE_SECONDS,
    Adapter,
    InFlight,
    MessageHandler,
    SendError,
    deadline_in,
    finish_by,
    fit_message,
)
from adapters.discord.config import DiscordConfig
from adapters.discord.convert import PLATFORM, message_to_chat
from adapters.extras import require
from memory.clock import Clock, SystemClock
from memory.types import ChatKind, ChatMessage, InboundEvent, MembershipChange, MessageDeletion

if TYPE_CHECKING:
    import discord

log = logging.getLogger(__name__)

MAX_MESSAGE_CHARS = 2000  # Discord refuses longer content (it counts code points)


class DiscordAdapter(Adapter):
    """Guild text channels, threads and DMs as chats; see `DiscordConfig`."""

    platform = PLATFORM

    def __init__(self, config: DiscordConfig, *, clock: Clock | None = None) -> None:
        self._discord = require("discord", "discord")
        self.config = config
        self._clock = clock or SystemClock()  # when a member left: Discord does not say
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
        user = self.client.user
        converted = message_to_chat(message, bot_id=user.id if user else 0)
        if converted is not None:
            await self._deliver(replace(converted, edited=True) if edited else converted)

    async def _on_raw_edit(self, payload: Any) -> None:
        """Any edit, of a cached message or not (Discord also sends one when a link preview appears:
        the text is then the same and nothing changes)."""
        await self._on_message(payload.message, edited=True)

    async def _on_raw_delete(self, payload: Any) -> None:
        await self._deleted(payload.channel_id, payload.guild_id, [payload.message_id])

    async def _on_raw_bulk_delete(self, payload: Any) -> None:
        await self._deleted(payload.channel_id, payload.guild_id, payload.message_ids)

    async def _deleted(self, channel_id: int, guild_id: int | None, message_ids: Iterable[int]) -> None:
        kind = ChatKind.PRIVATE if guild_id is None else ChatKind.GROUP
        for message_id in sorted(message_ids):
            await self._deliver(MessageDeletion(PLATFORM, str(channel_id), str(message_id), kind))

    async def _on_raw_member_remove(self, payload: Any) -> None:
        """A member left or was kicked or banned (with the Server Members intent only)."""
        await self._membership(payload.guild_id, payload.user.id, self._clock.now(), joined=False)

    async def _on_member_ban(self, guild: Any, user: Any) -> None:
        """A member was banned (told with the default intents, also without the members one)."""
        await self._membership(guild.id, user.id, self._clock.now(), joined=False)

    async def _on_member_join(self, member: Any) -> None:
        """A member joined (with the Server Members intent only)."""
        await self._membership(member.guild.id, member.id, member.joined_at or self._clock.now(), joined=True)

    async def _membership(self, guild_id: int, user_id: int, when: datetime, *, joined: bool) -> None:
        """Hand on a member leaving or joining server `guild_id`: a server's members are those of every
        channel and thread in it, so the change names them all (those the client knows: its channels,
        and its threads not archived). The bot itself leaving says nothing of anyone else's membership."""
        what = "joined" if joined else "left"
        user = self.client.user
        if user is not None and user_id == user.id:
            log.info("the bot %s Discord server %s: memory keeps its channels as they were", what, guild_id)
            return
        guild = self.client.get_guild(guild_id)
        chats = [] if guild is None else [c.id for c in (*guild.channels, *guild.threads)]
        if not chats:
            log.warning(
                "Discord member %s %s server %s, whose channels are unknown: not applied",
                user_id,
                what,
                guild_id,
            )
            return
        await self._deliver(
            MembershipChange(PLATFORM, tuple(str(c) for c in chats), str(user_id), when, joined=joined)
        )

    async def _deliver(self, event: InboundEvent) -> None:
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
        """Send `text` to a channel, thread or DM channel; @everyone and role pings are never sent.

        Text over Discord's 2000-character cap is cut there, between whole characters, with `…`."""
        discord = self._discord
        client = self.client
        text = fit_message(text, MAX_MESSAGE_CHARS, chat_id)
        try:
            channel = client.get_channel(int(chat_id)) or await client.fetch_channel(int(chat_id))
            reference = (
                discord.MessageReference(
                    message_id=int(reply_to), channel_id=int(chat_id), fail_if_not_exists=False
                )
                if reply_to
                else None
            )
            sent = await channel.send(  # type: ignore[union-attr]
                text,
                reference=reference,  # type: ignore[arg-type]  # None is accepted; the overloads omit it
                allowed_mentions=discord.AllowedMentions(
                    everyone=False, roles=False, users=True, replied_user=False
                ),
            )
        except (discord.DiscordException, ValueError) as exc:
            raise SendError(f"Discord refused the message to {chat_id}: {exc}") from exc
        user = client.user
        converted = message_to_chat(sent, bot_id=user.id if user else 0)
        if converted is None:
            raise SendError(f"Discord returned an empty message for channel {chat_id}")
        return converted
