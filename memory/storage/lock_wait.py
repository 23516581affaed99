"""How long a write waits for another process's lock: `[storage] busy_timeout_ms`, or less when its
caller has a deadline of its own (a tool call's time limit).

Without this, a caller whose time limit is not longer than the busy timeout is cancelled while its
write is still waiting, and reports being slow instead of the database being locked.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

_DEADLINE: ContextVar[float | None] = ContextVar("qunyi_write_deadline", default=None)


@contextmanager
def writes_give_up_by(deadline: float) -> Iterator[None]:
    """Writes begun inside the block (in this task and the tasks it starts) wait for another process's
    lock at most until `deadline`, a `time.monotonic()` value, then fail with DatabaseLocked. An outer
    deadline that comes sooner still holds."""
    outer = _DEADLINE.get()
    token = _DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def lock_wait_ms(busy_timeout_ms: int) -> int:
    """The busy timeout for a write transaction beginning now: `busy_timeout_ms`, cut to what is left
    before the deadline in force (never below 0, SQLite's "do not wait")."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return busy_timeout_ms
    left_ms = int((deadline - time.monotonic()) * 1000)
    return max(0, min(busy_timeout_ms, left_ms))


@dataclass(slots=True)
class LockWait:
    """The busy timeout the current write transaction began with, for its lock error to name."""

    ms: int
