"""What every live platform adapter offers the bot: an inbound feed and one outbound seam."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from memory.text import truncate_to_fit
from memory.types import ChatKind, ChatMessage, InboundEvent

MessageHandler = Callable[[InboundEvent], Awaitable[None]]  # messages, edits, deletions, chat moves
STOP_GRACE_SECONDS = 30.0  # how long stopping lets the answers and the messages being handled finish

log = logging.getLogger(__name__)


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def fit_message(text: str, limit: int, chat_id: str, *, utf16: bool = False) -> str:
    """`text` as a platform takes it: when longer than `limit` (code points, or UTF-16 code units with
    `utf16`), its start cut between whole graphemes and ended with `…`, and a warning logged. A platform
    refuses an over-long message outright, which would lose the whole reply."""
    size = _utf16_units if utf16 else len
    if size(text) <= limit:
        return text
    cut = truncate_to_fit(text, lambda part: size(part) <= limit, limit)
    log.warning("message to %s cut from %d to %d characters", chat_id, size(text), size(cut))
    return cut


def mentions(text: str, *handles: str) -> bool:
    """Whether `text` @-mentions one of `handles` (the bot's name or id) as a typed mention: `@` or a
    full-width `＠` right before it, not inside an address (`me@bottle.com`), and a handle ending in a
    Latin letter or digit not running on into more (`@bot` is not `@bottle`; `@群忆你好` is `@群忆`)."""
    return any(_typed_mention(handle).search(text) for handle in handles if handle)


def mention_spans(text: str, handles: Iterable[str]) -> list[tuple[int, int, str]]:
    """Each typed mention in `text` of one of `handles`, read as `mentions` reads them, as (start, end,
    handle) in the order of the text; where several handles fit one `@` (`@小红不红` fits `小红` and
    `小红不红`), the longest."""
    found: dict[int, tuple[int, str]] = {}
    for handle in sorted({h for h in handles if h}, key=len, reverse=True):
        for match in _typed_mention(handle).finditer(text):
            found.setdefault(match.start(), (match.end(), handle))
    spans: list[tuple[int, int, str]] = []
    for start, (end, handle) in sorted(found.items()):
        if not spans or start >= spans[-1][1]:  # a handle holding an `@` may hold another's match
            spans.append((start, end, handle))
    return spans


def _typed_mention(handle: str) -> re.Pattern[str]:
    after = r"(?![A-Za-z0-9_])" if handle[-1].isascii() and handle[-1].isalnum() else ""
    return re.compile(rf"(?<![A-Za-z0-9._%+\-])[@＠]{re.escape(handle)}{after}")


class InFlight:
    """Counts the messages an adapter is handling, so that `stop` can let them finish first."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = asyncio.Event()
        self._idle.set()
        # Set while a `drained` waits for messages still being handled: a test holding a handler
        # releases it on this, knowing the stop is under way and held back, rather than after a guess
        # at how long the stop takes to get there.
        self.draining = asyncio.Event()

    @contextlib.contextmanager
    def handling(self) -> Iterator[None]:
        """Count one message as being handled for the duration of the block."""
        self.begin()
        try:
            yield
        finally:
            self.end()

    def track(self, task: asyncio.Future[Any]) -> None:
        """Count `task` as a message being handled until it is done (from now, not from when it first
        runs: a `drained` right after still waits for it)."""
        self.begin()
        task.add_done_callback(lambda _task: self.end())

    def begin(self) -> None:
        """Count one more message as being handled, until a matching `end` (where `handling` and
        `track` do not fit: a message queued here and handled elsewhere)."""
        self._count += 1
        self._idle.clear()

    def end(self) -> None:
        """One message counted by `begin` is handled (or given up)."""
        self._count -= 1
        if self._count == 0:
            self._idle.set()

    async def drained(
        self, within: float = STOP_GRACE_SECONDS, still: str = "messages are still being handled"
    ) -> int:
        """Wait until no message is being handled, for at most `within` seconds; how many still are
        then (warned about as `still`)."""
        if self._count and within > 0:
            self.draining.set()
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._idle.wait(), within)
            finally:
                self.draining.clear()
        if self._count:
            log.warning("stopping while %d %s", self._count, still)
        return self._count


def deadline_in(seconds: float) -> float:
    """The event loop's time `seconds` from now, for `finish_by`."""
    return asyncio.get_running_loop().time() + seconds


async def finish_by(deadline: float, task: asyncio.Future[Any]) -> bool:
    """Wait for `task` until the loop time `deadline` (`deadline_in`); whether it was done by then. One
    still running is cancelled and not waited for, so that a stop keeps to its budget whatever the task
    does with the cancellation; its outcome (an error included) is left to it."""
    left = max(0.0, deadline - asyncio.get_running_loop().time())
    done, _ = await asyncio.wait({task}, timeout=left)
    if not done:
        task.cancel()
        return False
    if not task.cancelled():
        task.exception()  # retrieved: the stop goes on whatever it raised
    return True


async def unless_set(task: asyncio.Future[Any], event: asyncio.Event, grace: float | None = None) -> bool:
    """Wait for `task`, unless `event` is set first: `task` is then cancelled and given up to `grace`
    seconds to end (None: as long as it takes). Whether `task` ended on its own; its outcome (an error
    included) is left to the caller."""
    signalled = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({task, signalled}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        signalled.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=grace)
    return task.done() and not task.cancelled()


class SendError(RuntimeError):
    """The platform refused or failed to deliver an outgoing message."""


class Adapter(ABC):
    """A live connection to one platform.

    `start` begins delivering incoming messages (edited ones marked `edited`), the platform's
    deletions (`MessageDeletion`) and chats it moves to a new id (`ChatMoved`) to `handler`, and
    returns once running; `stop` lets the events being handled finish for up to `within` seconds,
    then closes the connection;
    `send_text` is the only way out and returns the bot's own message as the platform stored it,
    so the caller can record it (platforms often do not echo the bot's messages).
    """

    platform: str
    # True: the adapter tells the sender when handling their event failed (and logs it), so its handler
    # raises to it rather than logging the failure and going on
    reports_failures: bool = False

    @abstractmethod
    async def start(self, handler: MessageHandler) -> None: ...

    @abstractmethod
    async def stop(self, within: float = STOP_GRACE_SECONDS) -> None: ...

    @abstractmethod
    async def send_text(
        self,
        chat_id: str,
        text: str,
        *,
        chat_kind: ChatKind = ChatKind.GROUP,
        reply_to: str | None = None,
    ) -> ChatMessage: ...
