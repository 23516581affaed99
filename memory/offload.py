"""Where pure CPU work on text runs: inline for short text, on a worker thread for long text.

Jobs and the record path share the event loop with the adapters; segmenting a long message with jieba
(HMM, pinyin, name search) takes from a tenth of a second to seconds, during which no reply is sent and
no heartbeat is read. Work on short text stays inline, where a thread hop would cost more than the work.
The work must be pure: never hand a database session or an ORM row to it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

# About 20-60 ms of jieba on random CJK text; below it the work stays on the loop.
INLINE_CHARS = 2_000


async def text_work(chars: int, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """`fn(*args, **kwargs)`, on a worker thread when it reads more than INLINE_CHARS characters
    (`chars`), else inline. Either way the result is the same."""
    if chars > INLINE_CHARS:
        return await asyncio.to_thread(fn, *args, **kwargs)
    return fn(*args, **kwargs)


# About a second of the slowest analysis (jargon statistics) per thread call.
RUN_CHARS = 50_000


def runs(items: Sequence[T], chars: Callable[[T], int], limit: int | None = None) -> Iterator[Sequence[T]]:
    """`items` in consecutive runs of at most `limit` characters (`chars` of each; RUN_CHARS when
    None); an item longer than `limit` makes a run of its own."""
    limit = RUN_CHARS if limit is None else limit
    start, held = 0, 0
    for i, item in enumerate(items):
        size = chars(item)
        if i > start and held + size > limit:
            yield items[start:i]
            start, held = i, 0
        held += size
    if start < len(items):
        yield items[start:]


async def thread_work_in_runs(
    items: Sequence[T], chars: Callable[[T], int], fn: Callable[[Sequence[T]], Iterable[R]]
) -> list[R]:
    """`fn` over `items` run by run (see `runs`), each run its own worker-thread call, results in order.

    A thread cannot be stopped; a task awaiting one can. Cut into runs, work on many long messages is
    many short thread calls, so a job cancelled at shutdown stops after the run in hand instead of
    keeping the process alive until the whole batch is read. `fn` must treat items independently."""
    found: list[R] = []
    for run in runs(items, chars):
        found.extend(await asyncio.to_thread(fn, run))
    return found


async def text_work_in_runs(
    items: Sequence[T], chars: Callable[[T], int], fn: Callable[[Sequence[T]], Iterable[R]]
) -> list[R]:
    """`fn` over `items`: inline when they hold at most INLINE_CHARS characters in all (as `text_work`),
    else run by run on worker threads (`thread_work_in_runs`). Either way the result is the same."""
    if sum(chars(item) for item in items) > INLINE_CHARS:
        return await thread_work_in_runs(items, chars, fn)
    return list(fn(items))
