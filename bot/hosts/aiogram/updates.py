"""The updates of an aiogram Dispatcher, fed to Qunyi before the Dispatcher hands them to the handlers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from aiogram import BaseMiddleware, Bot, Dispatcher
from aiogram.dispatcher.event.telegram import TelegramEventObserver
from aiogram.methods import TelegramMethod
from aiogram.types import TelegramObject, Update, User

from adapters.host import ArrivalOrder
from adapters.telegram.reading import chat_member_events, message_events
from bot.hosts.aiogram.sent import Feed, tells_qunyi
from memory.types import InboundEvent


class UpdateRecorder(BaseMiddleware):
    """An outer middleware of a Dispatcher's `update` observer (`dp.update.outer_middleware`), which
    sees every update before any router does: the events of each update of `bot` are fed to Qunyi,
    then the update goes on to the handlers as if nothing had seen it (whatever Qunyi made of it). A
    method a handler returns as its answer, when it sends, edits or deletes a message, is made here as
    an API call, so that its result is recorded (`SentRecorder`).

    aiogram handles each update in a task of its own (`handle_as_tasks`, and a webhook's requests):
    the updates of one chat are fed in the order they came to it, each after those before it; the
    updates of other chats do not wait. Put it first among the outer middlewares (`first_of`), so that
    none of the bot's holds an update back before its place is taken."""

    def __init__(self, bot: Bot, feed: Feed, *, follow_upgrade: bool) -> None:
        self._bot = bot
        self._feed = feed
        self._follow_upgrade = follow_upgrade
        self._order = ArrivalOrder()

    async def __call__(
        self,
        handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
        event: TelegramObject,
        data: dict[str, Any],
    ) -> Any:
        bot = data.get("bot")
        if not (isinstance(event, Update) and isinstance(bot, Bot) and bot.id == self._bot.id):
            return await handler(event, data)
        chat = _chat_of(event)
        if chat is not None:
            async with self._order.turn(chat):  # its place taken before anything is awaited
                me = await bot.me()
                await self._feed(update_events(event, me, follow_upgrade=self._follow_upgrade))
        answer = await handler(event, data)
        if isinstance(answer, TelegramMethod) and tells_qunyi(answer):
            # A method a handler returns is made by aiogram after this, as an API call (whose result
            # the bot's session shows Qunyi), or handed to Telegram in a webhook's HTTP answer, whose
            # result no one sees: made here, it is recorded in either case (a failure is logged, as
            # aiogram logs it).
            await Dispatcher.silent_call_request(bot=bot, result=answer)
            return None
        return answer


def first_of(observer: TelegramEventObserver, middleware: BaseMiddleware) -> None:
    """Register `middleware` as the first outer middleware of `observer`, before those registered already
    (aiogram only appends)."""
    manager = observer.outer_middleware
    others = list(manager)
    for other in others:
        manager.unregister(other)
    manager.register(middleware)
    for other in others:
        manager.register(other)


def _chat_of(update: Update) -> int | None:
    """The chat of an update Qunyi reads; None for the other types, which tell it nothing."""
    found = update.message or update.edited_message or update.chat_member
    return None if found is None else found.chat.id


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
