"""The Telegram adapter on aiogram 3: a Dispatcher fed by long polling (or a webhook), one Bot for sending.

All outbound I/O goes through the aiogram `Bot`'s session; tests point it at a loopback fake Bot API
server (`api_base`) or feed updates directly with `feed_update`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import secrets
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
from adapters.extras import require
from adapters.telegram.config import TelegramConfig
from adapters.telegram.convert import PLATFORM
from adapters.telegram.reading import ALLOWED_UPDATES, chat_member_events, message_events
from adapters.telegram.sending import send_text
from memory import untrusted_json
from memory.types import ChatKind, ChatMessage, InboundEvent

if TYPE_CHECKING:
    from aiogram import Bot, Dispatcher
    from aiogram.types import ChatMemberUpdated, Message
    from aiohttp import web

log = logging.getLogger(__name__)


class TelegramAdapter(Adapter):
    """Telegram groups, supergroups and private chats; see `TelegramConfig`."""

    platform = PLATFORM

    def __init__(self, config: TelegramConfig) -> None:
        require("aiogram", "telegram")
        self.config = config
        self._handler: MessageHandler | None = None
        self._bot: Bot | None = None
        self._dp: Dispatcher | None = None
        self._bot_id = 0
        self._bot_username: str | None = None
        self._polling: asyncio.Task[None] | None = None
        self._runner: Any = None
        self._in_flight = InFlight()
        self._webhook_secret = ""  # set when the webhook starts
        self._stopping = False

    @property
    def bot(self) -> Bot:
        """The aiogram Bot (after `start`)."""
        if self._bot is None:
            raise RuntimeError("TelegramAdapter.start has not been called")
        return self._bot

    async def start(self, handler: MessageHandler) -> None:
        """Log in (`getMe`), then poll or set the webhook; returns once updates are flowing."""
        from aiogram import Bot, Dispatcher
        from aiogram.client.telegram import TelegramAPIServer

        from adapters.telegram.session import TolerantSession

        self._handler = handler
        self._stopping = False
        session = (
            TolerantSession(api=TelegramAPIServer.from_base(self.config.api_base))
            if self.config.api_base
            else TolerantSession()
        )
        self._bot = Bot(self.config.token, session=session)
        self._dp = Dispatcher()
        self._dp.message.register(self._on_message)
        self._dp.edited_message.register(self._on_edited)
        self._dp.chat_member.register(self._on_chat_member)
        me = await self._bot.get_me()
        self._bot_id, self._bot_username = me.id, me.username
        log.info("Telegram bot @%s (%s) logged in", me.username, me.id)
        if self.config.mode == "polling":
            await self._bot.delete_webhook(drop_pending_updates=self.config.drop_pending_updates)
            polling_started = asyncio.Event()

            async def started() -> None:
                polling_started.set()

            self._dp.startup.register(started)
            self._polling = asyncio.ensure_future(
                self._dp.start_polling(
                    self._bot,
                    polling_timeout=self.config.polling_timeout,
                    handle_as_tasks=False,  # one update at a time, in order
                    allowed_updates=ALLOWED_UPDATES,
                    handle_signals=False,
                    close_bot_session=False,
                )
            )
            # return only once polling runs, so that an early `stop` can stop it
            started_wait = asyncio.ensure_future(polling_started.wait())
            await asyncio.wait({started_wait, self._polling}, return_when=asyncio.FIRST_COMPLETED)
            started_wait.cancel()
            if self._polling.done():
                self._polling.result()  # polling failed to start: raise its error
        else:
            await self._start_webhook()

    async def _start_webhook(self) -> None:
        from aiohttp import web

        from adapters.listening import listen

        assert self._bot is not None and self.config.webhook_url
        app = web.Application()
        app.router.add_post(self.config.webhook_path, self._on_webhook)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        await listen(
            self._runner,
            self.config.webhook_host,
            self.config.webhook_port,
            host_key="[adapters.telegram] webhook_host",
            port_key="[adapters.telegram] webhook_port",
        )
        # Without a configured secret anyone who learns the path could post updates: make one per start.
        self._webhook_secret = self.config.webhook_secret or secrets.token_urlsafe(32)
        await self._bot.set_webhook(
            self.config.webhook_url,
            secret_token=self._webhook_secret,
            allowed_updates=ALLOWED_UPDATES,
            drop_pending_updates=self.config.drop_pending_updates,
            max_connections=1,  # one update at a time, in order, as polling
        )

    async def _on_webhook(self, request: web.Request) -> web.Response:
        """One update Telegram posts, handled before it is answered: an update not answered 200 (the bot
        was stopping, or died) is posted again. A body that is no JSON is answered 400; an update that
        cannot be read is skipped with a warning (answered 200, or Telegram would post it for ever)."""
        from aiogram.types import Update
        from aiohttp import web
        from pydantic import ValidationError

        from adapters.telegram.session import log_unreadable

        given = request.headers.get("X-Telegram-Bot-Api-Secret-Token", "")
        if not hmac.compare_digest(given.encode("utf-8", "surrogatepass"), self._webhook_secret.encode()):
            return web.Response(status=401, text="wrong secret token")
        if self._stopping or self._dp is None:
            return web.Response(status=503, text="stopping")
        with self._in_flight.handling():
            try:
                raw = untrusted_json.loads((await request.read()).decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                log.warning("Telegram webhook post from %s is not JSON: %s", request.remote, exc)
                return web.Response(status=400, text="the body is not JSON")
            try:
                update = Update.model_validate(raw, context={"bot": self.bot})
            except ValidationError as exc:
                log_unreadable(raw, exc)
                return web.Response(text="skipped")
            try:
                await self._dp.feed_update(self.bot, update)
            except Exception:  # polling logs it and goes on; so does the webhook
                log.exception("handling Telegram update %s failed", update.update_id)
            return web.Response(text="ok")

    async def stop(self, within: float = STOP_GRACE_SECONDS) -> None:
        """Let the update being handled finish (up to `within` seconds), stop polling or the webhook
        server and close the HTTP session, all within `within` seconds (whatever is still running
        then is cancelled). An update that comes in meanwhile, or whose handling is cut short, is not
        confirmed (polled: the next getUpdates offset, which would confirm it, is never asked for) or
        is refused with 503 (posted), and comes again after the next start."""
        deadline = deadline_in(within)
        self._stopping = True
        await self._in_flight.drained(within)
        if self._dp is not None and self._polling is not None:
            # aiogram cancels the poll in hand: the getUpdates call waiting, or the handler of an
            # update whose offset is not moved on until the handler returns
            await finish_by(deadline, asyncio.ensure_future(self._stop_polling(self._dp)))
            await finish_by(deadline, self._polling)
            self._polling = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._bot is not None:
            await self._bot.session.close()

    @staticmethod
    async def _stop_polling(dp: Dispatcher) -> None:
        with contextlib.suppress(RuntimeError):  # polling may already have ended
            await dp.stop_polling()

    async def feed_update(self, update: dict[str, Any]) -> None:
        """Process one raw Bot API update as if it had been polled (for tests and custom transports)."""
        if self._dp is None or self._bot is None:
            raise RuntimeError("TelegramAdapter.start has not been called")
        await self._dp.feed_raw_update(self._bot, update)

    async def _on_edited(self, message: Message) -> None:
        await self._on_message(message, edited=True)

    async def _held_while_stopping(self) -> None:
        """An update polled while the adapter stops waits to be cancelled: it stays unconfirmed, and
        Telegram sends it again after the next start."""
        if self._stopping and self._polling is not None:
            await asyncio.get_running_loop().create_future()

    async def _hand_on(self, events: Iterable[InboundEvent]) -> None:
        """Hand each of `events` on, in order (the next one is read once the one before is handled)."""
        for event in events:
            if self._handler is not None:
                with self._in_flight.handling():
                    await self._handler(event)

    async def _on_chat_member(self, updated: ChatMemberUpdated) -> None:
        """A member's status changed (sent to a bot that is an admin of the group): leaving, removed,
        joining (a service message may tell the same again; it then changes nothing)."""
        await self._held_while_stopping()
        await self._hand_on(chat_member_events(updated, bot_id=self._bot_id))

    async def _on_message(self, message: Message, edited: bool = False) -> None:
        await self._held_while_stopping()
        await self._hand_on(
            message_events(
                message,
                bot_id=self._bot_id,
                bot_username=self._bot_username,
                edited=edited,
                follow_upgrade=self.config.follow_supergroup_upgrade,
            )
        )

    async def send_text(
        self,
        chat_id: str,
        text: str,
        *,
        chat_kind: ChatKind = ChatKind.GROUP,
        reply_to: str | None = None,
    ) -> ChatMessage:
        """Send plain text through the adapter's Bot (adapters.telegram.sending.send_text: cut to fit,
        flood control waited out, a group's upgrade followed); `SendError` when it was not sent."""
        return await send_text(
            self.bot, chat_id, text, reply_to=reply_to, bot_id=self._bot_id, bot_username=self._bot_username
        )
