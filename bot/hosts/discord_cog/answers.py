"""Qunyi's own answers on Discord, known by their ids: the gateway tells the bot of each message it sent
(`on_message`), also of the answers Qunyi recorded from what the send returned."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable

from memory.types import ChatMessage

REMEMBERED = 1000
"""How many answers whose echo has not come are remembered (the oldest are let go): an answer deleted at
once may never be echoed."""


class SentAnswers:
    """The answers Qunyi sent, until the gateway echoes them: the echo is not fed to Qunyi a second time."""

    def __init__(self) -> None:
        self._sent: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._sending: dict[str, set[asyncio.Future[None]]] = {}

    async def send(self, chat_id: str, sending: Awaitable[ChatMessage]) -> ChatMessage:
        """The answer `sending` sends to channel `chat_id`, remembered once sent (its error raised)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        under_way = self._sending.setdefault(chat_id, set())
        under_way.add(done)
        try:
            sent = await sending
            self._sent[(sent.chat_id, sent.message_id)] = None
            while len(self._sent) > REMEMBERED:
                self._sent.popitem(last=False)
            return sent
        finally:
            done.set_result(None)
            under_way.discard(done)
            if not under_way and self._sending.get(chat_id) is under_way:
                del self._sending[chat_id]

    async def is_echo(self, message: ChatMessage) -> bool:
        """Whether `message`, the bot's own as the gateway tells of it, is an answer Qunyi sent (then
        forgotten here: an edit of it comes as an edit). The gateway may tell of it before the send
        returns: the sends under way to its channel are waited for first."""
        under_way = self._sending.get(message.chat_id)
        if under_way:
            await asyncio.wait(set(under_way))
        key = (message.chat_id, message.message_id)
        if key not in self._sent:
            return False
        del self._sent[key]
        return True
