"""Events of one chat recorded in the order they came, when a host library handles each event in a task
of its own (aiogram's `handle_as_tasks`, discord.py's listeners, nonebot's events): a task that was held
up (a database another process holds, a slow step of the host's) lets no later event of its chat be
recorded first."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Hashable


class Place:
    """An event's place in its key's line (ArrivalOrder.place): `reached` once the places before it are
    left, `leave` when its event is done (or will not come to be fed)."""

    def __init__(self, before: asyncio.Future[None] | None, mine: asyncio.Future[None]) -> None:
        self._before, self._mine = before, mine

    async def reached(self) -> None:
        """Return once every place taken before this one for its key was left."""
        if self._before is not None:
            await asyncio.wait({self._before})  # however it ended

    @contextlib.asynccontextmanager
    async def taken_up(self) -> AsyncIterator[None]:
        """The block runs once this place is reached, and leaves it (however the block ends)."""
        try:
            await self.reached()
            yield
        finally:
            self.leave()

    def leave(self) -> None:
        """Let the next place go (again: nothing). Left before it was reached (its task cancelled while
        waiting), the next place still waits for those before this one."""
        if self._mine.done():
            return
        if self._before is None or self._before.done():
            self._mine.set_result(None)
        else:
            self._before.add_done_callback(lambda _before: self.leave())


class ArrivalOrder:
    """Places by key (a chat): an event's turn comes when the events of its key that arrived before it are
    done; the events of different keys take no turns from each other."""

    def __init__(self) -> None:
        self._last: dict[Hashable, asyncio.Future[None]] = {}  # key -> its latest place not left yet

    def place(self, key: Hashable) -> Place:
        """Take the next place for `key`, now: take it where the event arrives, before anything is
        awaited, so that the order of the places is the order the events came in."""
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        before = self._last.get(key)
        self._last[key] = mine
        mine.add_done_callback(lambda _mine: self._forget(key, mine))
        return Place(before, mine)

    @contextlib.asynccontextmanager
    async def turn(self, key: Hashable) -> AsyncIterator[None]:
        """The block runs once the places taken before for `key` are left, and leaves this one. The place
        is taken as the block is entered: enter it before the task's first `await`."""
        async with self.place(key).taken_up():
            yield

    def _forget(self, key: Hashable, left: asyncio.Future[None]) -> None:
        if self._last.get(key) is left:
            del self._last[key]  # the key is idle: nothing kept for it
