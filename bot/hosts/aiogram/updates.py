"""The updates of an aiogram Dispatcher, fed to Qunyi before the Dispatcher hands them to the handlers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from aiogram import BaseMiddleware, Bot
from aiogram.types import TelegramObject, Update, User

from adapters.telegram.reading import chat_member_events, message_events
from memory.types import InboundEvent

Feed = Callable[[Iterable[InboundEvent]], Awaitable[None]]
"""How the events read are handed to Qunyi, in order."""


class UpdateRecorder(BaseMiddleware):
    """An outer middleware of a Dispatcher's `update` observer (`dp.update.outer_middleware`), which
    sees every update before any router does: the events of each update of `bot` are fed to Qunyi,
    then the update goes on to the handlers as if nothing had seen it (whatever Qunyi made of it)."""

    def __init__(self, bot: Bot, feed: Feed, *, follow_upgrade: bool) -> None:
        self._bot = bot
        self._feed = feed
        self._follow_upgrade = follow_upgrade

    async def __call__(
        self,
        handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
        event: TelegramObject,
        data: dict[str, Any],
    ) -> Any:
        bot = data.get("bot")
        if isinstance(event, Update) and isinstance(bot, Bot) and bot.id == self._bot.id:
            await self._feed(update_events(event, await bot.me(), follow_upgrade=self._follow_upgrade))
        return await handler(event, data)


def update_events(update: Update, me: User, *, follow_upgrade: bool) -> Iterator[InboundEvent]:
    """What `update` tells Qunyi, read as the Telegram adapter reads it for the bot `me`: a message or
    an edit (with a group's upgrade and the members a service message says left or joined), or a
    member's change of status; nothing for the other update types."""
    if update.message is not None:
        yield from message_events(
            update.message, bot_id=me.id, bot_username=me.username, follow_upgrade=follow_upgrade
        )
    elif update.edited_message is not None:
        yield from message_events(
            update.edited_message,
            bot_id=me.id,
            bot_username=me.username,
            edited=True,
            follow_upgrade=follow_upgrade,
        )
    elif update.chat_member is not None:
        yield from chat_member_events(update.chat_member, bot_id=me.id)
