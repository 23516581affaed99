"""What an aiogram Bot sends, edits and deletes through the Bot API, whichever handler asked, fed to
Qunyi as the bot's own doing: Telegram never sends a bot its own messages as updates."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, get_args

from aiogram import Bot
from aiogram.client.session.middlewares.base import BaseRequestMiddleware, NextRequestMiddlewareType
from aiogram.methods import DeleteMessage, DeleteMessages, Response, TelegramMethod
from aiogram.methods.base import TelegramType
from aiogram.types import Message

from adapters.host import sending_an_answer
from adapters.telegram.convert import PLATFORM
from adapters.telegram.reading import message_events
from memory.types import ChatKind, InboundEvent, MessageDeletion

Feed = Callable[[Iterable[InboundEvent]], Awaitable[None]]
"""How the events read are handed to Qunyi, in order."""


class SentRecorder(BaseRequestMiddleware):
    """A request middleware of a Bot's session (`bot.session.middleware`), which sees every API call and
    its result: a message `bot` sent or edited (a call whose result is the message) is fed to Qunyi as
    the bot's, and messages it deleted are forgotten. Calls that failed tell nothing."""

    def __init__(self, bot: Bot, feed: Feed) -> None:
        self._bot = bot
        self._feed = feed

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Response[TelegramType]:
        answer = await make_request(bot, method)
        if not sending_an_answer() and bot.id == self._bot.id:
            # typed a Response, the chain hands on the call's result itself (aiogram 3)
            result = answer.result if isinstance(answer, Response) else answer
            await self._feed(await sent_events(bot, method, result))
        return answer


async def sent_events(bot: Bot, method: TelegramMethod[Any], result: Any) -> list[InboundEvent]:
    """What the call `method` of `bot`, which answered `result`, tells Qunyi: the messages it sent or
    edited (`editMessage…`), read as the Telegram adapter reads a message; the messages it deleted."""
    if isinstance(method, DeleteMessage | DeleteMessages):
        return _deleted(method) if result is True else []
    messages = [m for m in (result if isinstance(result, list) else [result]) if isinstance(m, Message)]
    if not messages:
        return []
    me = await bot.me()  # asked only here: the getMe call itself, answered by a User, comes through too
    edited = method.__api_method__.startswith("edit")
    return [
        event
        for message in messages
        for event in message_events(message, bot_id=me.id, bot_username=me.username, edited=edited)
    ]


def tells_qunyi(method: TelegramMethod[Any]) -> bool:
    """Whether the call `method`, once made, tells Qunyi something (`sent_events`): it deletes messages,
    or its result may be a message (it sends or edits one)."""
    return isinstance(method, DeleteMessage | DeleteMessages) or _holds_message(method.__returning__)


def _holds_message(returned: Any) -> bool:
    return returned is Message or any(_holds_message(part) for part in get_args(returned))


def _deleted(method: DeleteMessage | DeleteMessages) -> list[InboundEvent]:
    """The messages a successful deletion removed; none in a chat named by `@username`, whose id the
    call does not give."""
    chat_id = str(method.chat_id)
    if not chat_id.removeprefix("-").isdigit():
        return []
    kind = ChatKind.PRIVATE if int(chat_id) > 0 else ChatKind.GROUP
    ids = [method.message_id] if isinstance(method, DeleteMessage) else sorted(method.message_ids)
    return [MessageDeletion(PLATFORM, chat_id, str(message_id), kind) for message_id in ids]
