"""Where pure CPU work on text runs: inline for short text, on a worker thread for long text.

Jobs and the record path share the event loop with the adapters; segmenting a long message with jieba
(HMM, pinyin, name search) takes from a tenth of a second to seconds, during which no reply is sent and
no heartbeat is read. Work on short text stays inline, where a thread hop would cost more than the work.
The work must be pure: never hand a database session or an ORM row to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

# About 20-60 ms of jieba on random CJK text; below it the work stays on the loop.
INLINE_CHARS = 2_000


async def text_work(chars: int, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """`fn(*args, **kwargs)`, on a worker thread when it reads more than INLINE_CHARS characters
    (`chars`), else inline. Either way the result is the same."""
    if chars > INLINE_CHARS:
        return await asyncio.to_thread(fn, *args, **kwargs)
    return fn(*args, **kwargs)
