"""The adapter of a host program: a bot of its own (nonebot2, aiogram, discord.py…) that embeds Qunyi.

The host already speaks to the platform. It hands Qunyi each event it receives (`feed`), as neutral
`memory.types` events, and Qunyi's answers go out through the host's own `send`, which returns the
message as the platform stored it (so it is recorded: platforms often do not echo a bot's messages).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Protocol

from adapters.base import STOP_GRACE_SECONDS, Adapter, InFlight, MessageHandler, SendError
from memory.types import ChatKind, ChatMessage, ChatMoved, InboundEvent, MembershipChange, MessageDeletion

_EVENTS = (ChatMessage, MessageDeletion, ChatMoved, MembershipChange)

log = logging.getLogger(__name__)


_ANSWERING: contextvars.ContextVar[bool] = contextvars.ContextVar("qunyi_answering", default=False)


@contextlib.contextmanager
def _answering() -> Iterator[None]:
    token = _ANSWERING.set(True)
    try:
        yield
    finally:
        _ANSWERING.reset(token)


def sending_an_answer() -> bool:
    """Whether the code running now is the host's `send` of one of Qunyi's answers: a host that records
    what its bot sends (an API hook) leaves those calls out, since the answer is recorded from what
    `send` returns."""
    return _ANSWERING.get()


class HostSend(Protocol):
    """The host's way of sending `text` to chat `chat_id` (the platform's id), as an answer to message
    `reply_to` when given; returns the message sent, as the platform stored it (`ChatMessage.outgoing`
    builds one). Raising says it was not delivered."""

    def __call__(
        self, chat_id: str, text: str, *, chat_kind: ChatKind, reply_to: str | None
    ) -> Awaitable[ChatMessage]: ...


class QunyiStopped(RuntimeError):
    """An event fed before Qunyi started or after it stopped: nothing was recorded."""


async def feed_while_running(
    feed: Callable[[InboundEvent], Awaitable[None]], events: Iterable[InboundEvent]
) -> None:
    """Hand `feed` (a QunyiPlugin's) each of `events`, in order, as a host's listener does: an event that
    comes while Qunyi is not running (before it started, after it stopped) is logged as not recorded,
    not raised into the host."""
    for event in events:
        try:
            await feed(event)
        except QunyiStopped as exc:
            log.warning("%s", exc)


class HostAdapter(Adapter):
    """One platform of a host program. `feed` hands Qunyi one event and returns once it is recorded
    (Qunyi's answer, if any, goes out through `send` afterwards); `stop` lets the events being fed
    finish first."""

    def __init__(self, platform: str, send: HostSend) -> None:
        self.platform = platform
        self._send = send
        self._handler: MessageHandler | None = None
        self._in_flight = InFlight()

    async def start(self, handler: MessageHandler) -> None:
        self._handler = handler

    async def feed(self, event: InboundEvent) -> None:
        """Record `event` (a message, an edit, a deletion, a member leaving or joining, a chat moved to
        a new id) of this adapter's platform. TypeError or ValueError when it is no such event;
        QunyiStopped when Qunyi is not running."""
        if not isinstance(event, _EVENTS):
            raise TypeError(f"not a Qunyi event: {type(event).__name__} (see memory.types.InboundEvent)")
        if event.platform != self.platform:
            raise ValueError(f"a {event.platform!r} event fed to Qunyi's {self.platform!r} adapter")
        handler = self._handler
        if handler is None:
            raise QunyiStopped(f"Qunyi is not running: the {self.platform} event was not recorded")
        with self._in_flight.handling():
            await handler(event)

    async def stop(self, within: float = STOP_GRACE_SECONDS) -> None:
        """Take no more events; those being recorded get up to `within` seconds."""
        self._handler = None
        await self._in_flight.drained(within, f"{self.platform} events fed by the host are being recorded")

    async def send_text(
        self, chat_id: str, text: str, *, chat_kind: ChatKind = ChatKind.GROUP, reply_to: str | None = None
    ) -> ChatMessage:
        try:
            with _answering():
                sent = await self._send(chat_id, text, chat_kind=chat_kind, reply_to=reply_to)
        except SendError:
            raise
        except Exception as exc:  # the host's failure, whatever its library raises
            raise SendError(f"the host's send to {chat_id} failed: {exc!r}") from exc
        if not isinstance(sent, ChatMessage):
            raise TypeError(f"the host's send returned {type(sent).__name__}, not the ChatMessage it sent")
        return sent
