"""Qunyi for one aiogram Bot: started and stopped with the Dispatcher, fed what the Bot receives and sends,
answering through the Bot."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from aiogram import Bot, Dispatcher
from aiogram.types import Message

from adapters.host import feed_while_running
from adapters.telegram.convert import PLATFORM, message_to_chat
from adapters.telegram.reading import ALLOWED_UPDATES
from adapters.telegram.sending import send_text
from bot.hosts.aiogram.sent import SentRecorder
from bot.hosts.aiogram.updates import UpdateRecorder, first_of
from bot.plugin import QunyiPlugin
from memory.context.builder import ReplyContext
from memory.types import ChatKind, ChatMessage, InboundEvent, InvalidMessage


class AiogramQunyi:
    """Qunyi's memory for the aiogram `bot` (platform `telegram`, chats by their Bot API ids): `attach`
    it to the Dispatcher that polls the bot (or gets its webhook), which then starts and stops it.
    `config` and `data_dir` as for bot.plugin.QunyiPlugin; `follow_supergroup_upgrade` as the Telegram
    adapter's setting (a group upgraded to a supergroup takes its memory along)."""

    def __init__(
        self,
        bot: Bot,
        *,
        config: Path | None = None,
        data_dir: Path | None = None,
        follow_supergroup_upgrade: bool = True,
    ) -> None:
        self.bot = bot
        self.plugin = QunyiPlugin(PLATFORM, self.send, config=config, data_dir=data_dir)
        """The QunyiPlugin itself: its `memory`, `context()`, `reload()` (QunyiStopped when not running)."""
        self._follow_upgrade = follow_supergroup_upgrade

    def attach(self, dp: Dispatcher) -> None:
        """Feed Qunyi every update of the bot `dp` gets before its handlers see it (the first outer
        middleware of `dp.update`, before the bot's own, which consumes nothing), and what the bot sends
        (a middleware of its session); start Qunyi with `dp` and stop it with it (`dp.startup`,
        `dp.shutdown`)."""
        first_of(dp.update, UpdateRecorder(self.bot, self._feed, follow_upgrade=self._follow_upgrade))
        self.bot.session.middleware(SentRecorder(self.bot, self._feed))
        dp.startup.register(self.start)
        dp.shutdown.register(self.stop)

    @staticmethod
    def allowed_updates(dp: Dispatcher) -> list[str]:
        """The update types to ask Telegram for (`start_polling`'s or `set_webhook`'s `allowed_updates`):
        those `dp`'s handlers take and those Qunyi reads. Left to aiogram, only the types some handler
        takes are asked for, and Telegram sends `chat_member` only when asked."""
        return sorted({*dp.resolve_used_update_types(), *ALLOWED_UPDATES})

    async def start(self) -> None:
        """Learn who the bot is (`getMe`, once), then start Qunyi (bot.plugin.QunyiPlugin.start). Their
        errors are raised, and the Dispatcher's start fails with them."""
        await self.bot.me()
        await self.plugin.start()

    async def stop(self) -> None:
        """Let the events being recorded and the answers under way finish, and close the data directory."""
        await self.plugin.stop()

    async def send(
        self, chat_id: str, text: str, *, chat_kind: ChatKind, reply_to: str | None
    ) -> ChatMessage:
        """Qunyi's answer, sent through the bot as the Telegram adapter sends (plain text, a reply to
        `reply_to`, cut to fit, flood control waited out): the bot.plugin.HostSend of this host."""
        me = await self.bot.me()
        return await send_text(
            self.bot, chat_id, text, reply_to=reply_to, bot_id=me.id, bot_username=me.username
        )

    async def context(self, message: Message) -> ReplyContext:
        """The memory for the bot's own reply prompt to `message` (bot.plugin.QunyiPlugin.context);
        empty for a message Qunyi does not record (a service message, one that holds nothing)."""
        me = await self.bot.me()
        try:
            converted = message_to_chat(message, bot_id=me.id, bot_username=me.username)
        except InvalidMessage:  # a date before 1970
            converted = None
        return ReplyContext() if converted is None else await self.plugin.context(converted)

    async def _feed(self, events: Iterable[InboundEvent]) -> None:
        await feed_while_running(self.plugin.feed, events)
