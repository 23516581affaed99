"""Token accounting per task in the `llm_usage` table, and the rolling-window budget checks on it."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import TypedDict

from sqlalchemy import case, func, select

from bot.llm.settings import Budget
from memory.clock import Clock
from memory.models import LlmUsage
from memory.storage.database import Database, DatabaseLocked, DatabaseWriteFailed
from memory.text import truncate

log = logging.getLogger(__name__)

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
_ERROR_CHARS = 500
MAX_REQUEST_TOKENS = 2**31 - 1
"""The most tokens one request is counted for: more than any model reads or writes at once. A server
reporting more (10**30, a garbled count) is counted this much, over any cap, instead of a number SQLite
cannot store, which failed the request and then every later write of the ledger, shutdown's too."""
CANCELLED = "cancelled while waiting for the answer; prompt tokens estimated, completion unknown"


class TaskUsage(TypedDict):
    """One task's line in `qunyi doctor`: tokens and calls in the rolling windows, caps, verdict."""

    hour: int
    day: int
    calls: int
    failures: int
    cancelled: int
    cap_hour: int | None
    cap_day: int | None
    blocked_reason: str | None


def _over(task: str, used: int, cap: int | None, window: str, in_flight: int = 0) -> str | None:
    if cap is not None and used + in_flight >= cap:
        pending = f" and {in_flight:,} reserved by requests in flight" if in_flight else ""
        return f"{task}: {used:,} tokens in the last {window}{pending}, cap {cap:,}"
    return None


def _counted(tokens: int) -> int:
    return min(max(0, int(tokens)), MAX_REQUEST_TOKENS)


@dataclass(frozen=True, slots=True)
class Spent:
    """One request's `llm_usage` row before it is written."""

    task: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    ok: bool
    error: str
    time: float
    cancelled: bool = False

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def _tally(rows: Iterable[Spent], hour_start: float) -> dict[str, tuple[int, int, int, int, int]]:
    """Per task: tokens in the last hour, tokens, calls, failures, cancelled (as `summary` counts them)."""
    tallies: dict[str, tuple[int, int, int, int, int]] = {}
    for row in rows:
        hour, day, calls, failures, cancelled = tallies.get(row.task, (0, 0, 0, 0, 0))
        tallies[row.task] = (
            hour + (row.tokens if row.time >= hour_start else 0),
            day + row.tokens,
            calls + 1,
            failures + (not row.ok),
            cancelled + row.cancelled,
        )
    return tallies


class UsageLedger:
    """Persists one row per LLM request and answers "how much did task X spend lately".

    Windows are rolling: the last hour and the last 24 hours before `clock.now()`.
    `calls` and `failures` in `summary()` count HTTP requests over the last day.

    A row the database does not take (locked by another process past the busy timeout, or a disk that
    refuses writes) is kept in memory, counted in budgets and summaries as if written (as is a row
    whose write is still waiting on the lock), and written with the next row that gets through or by
    `close()`: tokens are never lost to a busy database, and a ledger failure never fails the request
    it accounts for.
    """

    def __init__(self, db: Database, clock: Clock, budgets: Mapping[str, Budget] | None = None) -> None:
        self.db = db
        self.clock = clock
        self.budgets: dict[str, Budget] = dict(budgets or {})
        self._unwritten: list[Spent] = []
        # Rows a write under way carries: it may wait out the busy timeout, and they still count.
        self._writing: list[Spent] = []
        self._refused = False

    def keep(
        self,
        task: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        ok: bool,
        error: str = "",
        *,
        cancelled: bool = False,
    ) -> None:
        """Hold one request's row in memory, without waiting (a cancelled request cannot); the next
        `record`, `flush` or `close` writes it."""
        self._unwritten.append(
            Spent(
                task=task,
                model=truncate(model, 128),
                prompt_tokens=_counted(prompt_tokens),
                completion_tokens=_counted(completion_tokens),
                ok=ok,
                error=truncate(error, _ERROR_CHARS),
                time=self.clock.now().timestamp(),
                cancelled=cancelled,
            )
        )

    async def record(
        self,
        task: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        ok: bool,
        error: str = "",
    ) -> None:
        """Persist one request's token counts (zero when nothing came back) and its outcome, with any
        row held before; a database that does not take them keeps them held instead of raising."""
        self.keep(task, model, prompt_tokens, completion_tokens, ok, error)
        await self.flush()

    async def flush(self) -> bool:
        """Write the rows held in memory; False when the database did not take them (they stay held)."""
        batch, self._unwritten = self._unwritten, []
        if not batch:
            return True
        self._writing.extend(batch)
        try:
            async with self.db.write() as session:
                session.add_all(LlmUsage(**asdict(row)) for row in batch)
        except (DatabaseLocked, DatabaseWriteFailed) as exc:
            self._unwritten[:0] = batch
            if not self._refused:
                log.warning("LLM usage kept in memory until the database takes it: %s", exc)
            self._refused = True
            return False
        except BaseException:  # cancelled or failed: the transaction was rolled back
            self._unwritten[:0] = batch
            raise
        finally:
            carried = {id(row) for row in batch}
            self._writing = [row for row in self._writing if id(row) not in carried]
        if self._refused:
            log.info("LLM usage held in memory written: %d rows", len(batch))
        self._refused = False
        return True

    async def close(self) -> None:
        """Write the rows still held in memory; say in the log what could not be written."""
        if not await self.flush():
            tokens = sum(row.tokens for row in self._unwritten)
            log.error(
                "LLM usage of %d requests (%d tokens) could not be written to %s and is lost",
                len(self._unwritten),
                tokens,
                self.db.path,
            )

    def _held(self) -> list[Spent]:
        """The rows not in the database yet: held, or in a write still under way."""
        return self._unwritten + self._writing

    def _held_since(self, task: str, since: float) -> int:
        return sum(row.tokens for row in self._held() if row.task == task and row.time >= since)

    async def used(self, task: str, since: datetime) -> int:
        """Tokens (prompt + completion) spent by `task` from `since` until now, rows held in memory
        included."""
        query = select(func.coalesce(func.sum(LlmUsage.prompt_tokens + LlmUsage.completion_tokens), 0)).where(
            LlmUsage.task == task, LlmUsage.time >= since.timestamp()
        )
        async with self.db.read() as session:
            return int((await session.execute(query)).scalar_one()) + self._held_since(
                task, since.timestamp()
            )

    async def over_budget(self, task: str, in_flight: int = 0) -> str | None:
        """A reason such as "jargon: 200,513 tokens in the last hour, cap 200,000", or None.
        `in_flight`: tokens reserved by requests not recorded yet, counted as spent."""
        budget = self.budgets.get(task)
        if budget is None:
            return None
        now = self.clock.now()
        if budget.tokens_per_hour is not None:
            used = await self.used(task, now - HOUR)
            reason = _over(task, used, budget.tokens_per_hour, "hour", in_flight)
            if reason:
                return reason
        if budget.tokens_per_day is not None:
            return _over(task, await self.used(task, now - DAY), budget.tokens_per_day, "day", in_flight)
        return None

    async def summary(self) -> dict[str, TaskUsage]:
        """Per task (every budgeted task, plus any task seen in the last day), sorted by name."""
        now = self.clock.now()
        hour_start, day_start = (now - HOUR).timestamp(), (now - DAY).timestamp()
        tokens = LlmUsage.prompt_tokens + LlmUsage.completion_tokens
        query = (
            select(
                LlmUsage.task,
                func.sum(case((LlmUsage.time >= hour_start, tokens), else_=0)),
                func.sum(tokens),
                func.count(),
                func.sum(case((LlmUsage.ok.is_(False), 1), else_=0)),
                func.sum(case((LlmUsage.cancelled.is_(True), 1), else_=0)),
            )
            .where(LlmUsage.time >= day_start)
            .group_by(LlmUsage.task)
        )
        async with self.db.read() as session:
            rows = {row[0]: row[1:] for row in (await session.execute(query)).all()}
        held = _tally((row for row in self._held() if row.time >= day_start), hour_start)
        result: dict[str, TaskUsage] = {}
        for task in sorted(set(rows) | set(held) | set(self.budgets)):
            written = (int(v or 0) for v in rows.get(task, (0, 0, 0, 0, 0)))
            hour, day, calls, failures, cancelled = (
                a + b for a, b in zip(written, held.get(task, (0, 0, 0, 0, 0)), strict=True)
            )
            budget = self.budgets.get(task, Budget())
            reason = _over(task, hour, budget.tokens_per_hour, "hour") or _over(
                task, day, budget.tokens_per_day, "day"
            )
            result[task] = TaskUsage(
                hour=hour,
                day=day,
                calls=calls,
                failures=failures,
                cancelled=cancelled,
                cap_hour=budget.tokens_per_hour,
                cap_day=budget.tokens_per_day,
                blocked_reason=reason,
            )
        return result
