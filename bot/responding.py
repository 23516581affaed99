"""Answers worked out off the adapter's feed: a live message is recorded as it comes, and the bot's
answer to it (a model call, tool rounds, the send: seconds) runs in a task of its own, so that it holds
up no later message's recording."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable

from adapters.base import STOP_GRACE_SECONDS, InFlight

log = logging.getLogger(__name__)


class Responses:
    """The answers under way: those of one chat one at a time, in the order they were started (the
    order their messages were recorded); those of different chats at once."""

    def __init__(self) -> None:
        self._in_flight = InFlight()
        self._tasks: set[asyncio.Task[None]] = set()
        self._last: dict[Hashable, asyncio.Task[None]] = {}  # chat -> its latest answer not done yet
        self._closed = False

    def start(self, chat: Hashable, respond: Callable[[], Awaitable[None]]) -> bool:
        """Run `respond()` after the answers `chat` already has under way; False (nothing run) once
        `stop` began. `respond` handles its own failures: one that escapes is logged here."""
        if self._closed:
            return False
        before = self._last.get(chat)
        task = asyncio.create_task(self._after(before, respond))
        self._last[chat] = task
        self._tasks.add(task)
        self._in_flight.track(task)
        task.add_done_callback(lambda done: self._done(chat, done))
        return True

    async def stop(self, within: float = STOP_GRACE_SECONDS) -> None:
        """Start no more answers, let those under way finish for up to `within` seconds, then cancel
        the rest (their messages are recorded; a cancelled answer's recording is rolled back whole)."""
        self._closed = True
        if await self._in_flight.drained(within, "answers are still being prepared: they are dropped"):
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    @staticmethod
    async def _after(before: asyncio.Task[None] | None, respond: Callable[[], Awaitable[None]]) -> None:
        if before is not None:
            await asyncio.wait({before})  # however it ended
        await respond()

    def _done(self, chat: Hashable, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._last.get(chat) is task:
            del self._last[chat]  # the chat is idle: nothing kept for it
        if not task.cancelled() and (failure := task.exception()) is not None:
            log.error("an answer failed", exc_info=failure)
