"""Asking a model again about rows done offline while it was down, over budget or not configured (topics
packed offline: memory.history.redigest; messages people's consolidation read offline only:
memory.persons.relearn), a few per run.

Each row is read, the model asked outside any write transaction, and the answer stored only if the row
is as it was read (the `store` callable checks it in its own short transaction). A row the model
answers unusably, or whose request the endpoint refuses while it answers others, is marked tried
(`store` with None) and not asked about again until it changes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from memory.ports import LLMBadAnswer, LLMPort, LLMRefused, LLMUnavailable

log = logging.getLogger(__name__)

Key = TypeVar("Key")
Row = TypeVar("Row")
Answer = TypeVar("Answer")


class NotWorthAsking(Exception):
    """Raised by `ask` before asking the model about a row it cannot help with (its messages are gone or
    in another chat): the row is marked tried at once, and the run goes on as if it was not met."""


@dataclass(frozen=True, slots=True)
class RedoRun:
    """What one run did: rows given the model's answer, rows marked tried, and why the model stopped
    the run leaving rows to do (None when it did not)."""

    stored: int = 0
    tried: int = 0
    stopped: str | None = None


async def redo_offline(
    llm: LLMPort,
    task: str,
    ids: Sequence[Key],
    read: Callable[[Key], Awaitable[Row | None]],
    ask: Callable[[Row], Awaitable[Answer | None]],
    store: Callable[[Row, Answer | None], Awaitable[bool]],
) -> RedoRun:
    """Redo rows `ids` (or groups of rows asked about in one request) in that order: `read` a row
    (None: gone or done, skipped), `ask` the model about it (None or LLMBadAnswer: answered unusably;
    NotWorthAsking: not asked), `store` the answer (None: mark the row tried; False when the row
    changed meanwhile).

    Stops at the first LLMUnavailable (down, timing out, over budget): the rows stay as they are and a
    later run tries again. A refused request is put aside like jargon inference does
    (memory.jargon.inference): once another row is answered it was refused for its own content and is
    marked tried; a second refusal in a row, or one no answer follows, stops the run with both left."""
    stored = tried = 0
    stopped: str | None = None
    refused: list[Row] = []
    for row_id in ids:
        if not llm.available(task):
            break
        row = await read(row_id)
        if row is None:
            continue
        found: Answer | None
        try:
            found = await ask(row)
        except NotWorthAsking:
            tried += await store(row, None)
            continue
        except LLMBadAnswer as exc:
            log.info("%s for row %s gave no usable answer: %s", task, row_id, exc.reason)
            found = None
        except LLMRefused as exc:
            log.info("%s for row %s refused: %s", task, row_id, exc.reason)
            stopped = exc.reason
            if refused:
                break
            refused.append(row)
            continue
        except LLMUnavailable as exc:
            stopped = exc.reason
            break
        for earlier in refused:
            tried += await store(earlier, None)
        refused.clear()
        stopped = None
        if found is None:
            tried += await store(row, None)
        else:
            stored += await store(row, found)
    return RedoRun(stored, tried, stopped)
