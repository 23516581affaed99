"""Events of one chat recorded in the order they came, when a host library handles each event in a task
of its own (aiogram's `handle_as_tasks`, discord.py's listeners): a task that was held up (a database
another process holds, a slow step of the host's) lets no later event of its chat be recorded first."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Hashable


class ArrivalOrder:
    """Turns by key (a chat): an event's turn comes when the events of its key that arrived before it are
    done; the events of different keys take no turns from each other."""

    def __init__(self) -> None:
        self._last: dict[Hashable, asyncio.Future[None]] = {}  # key -> its latest turn not done yet

    @contextlib.asynccontextmanager
    async def turn(self, key: Hashable) -> AsyncIterator[None]:
        """The block runs once the turns taken before for `key` are done. The place is taken as the
        block is entered, before anything is awaited: enter it before the task's first `await`, so
        that the order of the places is the order the tasks were started in."""
        before = self._last.get(key)
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last[key] = mine
        try:
            if before is not None:
                await asyncio.wait({before})  # however it ended
            yield
        finally:
            if before is None or before.done():
                self._done(key, mine)
            else:  # cancelled while waiting: the turns after this one still wait for `before`
                before.add_done_callback(lambda _before: self._done(key, mine))

    def _done(self, key: Hashable, turn: asyncio.Future[None]) -> None:
        turn.set_result(None)
        if self._last.get(key) is turn:
            del self._last[key]  # the key is idle: nothing kept for it
