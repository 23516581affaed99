"""Token accounting per task in the `llm_usage` table, and the rolling-window budget checks on it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TypedDict

from sqlalchemy import case, func, select

from bot.llm import usage_spill
from bot.llm.settings import Budget
from bot.llm.spent import MAX_REQUEST_TOKENS, Spent
from memory.clock import Clock
from memory.models import LlmUsage
from memory.storage.database import Database, DatabaseLocked, DatabaseWriteFailed
from memory.text import truncate

log = logging.getLogger(__name__)

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
_ERROR_CHARS = 500
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
    last_error: str | None
    """The error of the task's latest request in the last day (not counting cancelled ones) when it
    failed: what stops a task that fails at every call (a spent quota, a wrong key or base_url)."""


def _over(task: str, used: int, cap: int | None, window: str, in_flight: int = 0) -> str | None:
    if cap is not None and used + in_flight >= cap:
        pending = f" and {in_flight:,} reserved by requests in flight" if in_flight else ""
        return f"{task}: {used:,} tokens in the last {window}{pending}, cap {cap:,}"
    return None


def _counted(tokens: int) -> int:
    return min(max(0, int(tokens)), MAX_REQUEST_TOKENS)


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
    refuses writes) is kept on disk beside it (bot.llm.usage_spill; in memory when that cannot be
    written either), counted in budgets and summaries as if written (as is a row whose write is still
    waiting on the lock), and written just before the next row that gets through, by `close()`, or when
    the bot next starts (`write_held`): tokens are never lost to a busy database, not even when the process
    is then killed, and a ledger failure never fails the request it accounts for. Rows another process
    left on disk are counted too, and written only by a ledger that writes rows itself (a command that
    only reads the database never writes them).
    """

    def __init__(self, db: Database, clock: Clock, budgets: Mapping[str, Budget] | None = None) -> None:
        self.db = db
        self.clock = clock
        self.budgets: dict[str, Budget] = dict(budgets or {})
        self._unwritten: list[Spent] = []
        # Rows a write under way carries: it may wait out the busy timeout, and they still count.
        self._writing: list[Spent] = []
        self._refused = False
        self.data_dir = db.path.parent
        self._on_disk: list[Spent] | None = None  # read when first needed, again after each change
        self._writes = False  # this ledger wrote (or was asked to write) rows: it may write held ones
        self._writing_held = asyncio.Lock()

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
        """Write the rows held on disk, then those held in memory, in the order they came; False when
        the database did not take them (they stay held)."""
        batch, self._unwritten = self._unwritten, []
        self._writes = self._writes or bool(batch)
        self._writing.extend(batch)
        try:
            refused = await self._write_held() if self._writes else None
            if batch and refused is None:
                refused = await self._write(batch)
        except BaseException:  # cancelled or failed: the transaction was rolled back
            self._unwritten[:0] = batch
            raise
        finally:
            carried = {id(row) for row in batch}
            self._writing = [row for row in self._writing if id(row) not in carried]
        if refused is not None:
            where = self._hold(batch) if batch else f"in {self.data_dir / usage_spill.FILE_NAME}"
            if not self._refused:
                log.warning("LLM usage kept %s until the database takes it: %s", where, refused)
            self._refused = True
            return False
        if self._refused:
            log.info("LLM usage held until now written")
        self._refused = False
        return True

    async def write_held(self) -> bool:
        """Write the rows an earlier run (or another process) held on disk; False when the database did
        not take them (they stay there). `qunyi run` calls it as it starts."""
        self._writes = True
        return await self.flush()

    async def _write(self, batch: list[Spent]) -> Exception | None:
        """Write `batch`; the database's refusal, if it refused."""
        try:
            async with self.db.write() as session:
                session.add_all(LlmUsage(**row.to_json()) for row in batch)
        except (DatabaseLocked, DatabaseWriteFailed) as exc:
            return exc
        return None

    async def _write_held(self) -> Exception | None:
        """Write the rows held on disk (if any); the database's refusal, if it refused."""
        async with self._writing_held:
            if not self._disk():
                return None
            try:
                await usage_spill.write_held(self.db, self.data_dir)
            except (DatabaseLocked, DatabaseWriteFailed) as exc:
                return exc
            finally:
                self._on_disk = None
            return None

    def _hold(self, batch: list[Spent]) -> str:
        """Keep rows the database refused on disk, or in memory when the disk refuses them too; says
        where."""
        held = self.data_dir / usage_spill.FILE_NAME
        try:
            usage_spill.spill(self.data_dir, batch)
        except OSError as exc:
            self._unwritten[:0] = batch
            return f"in memory (they could not be kept in {held}: {exc})"
        self._on_disk = None
        return f"in {held}"

    async def close(self) -> None:
        """Write the rows still held; say in the log what could not be written."""
        if await self.flush():
            return
        if self._unwritten:
            tokens = sum(row.tokens for row in self._unwritten)
            log.error(
                "LLM usage of %d requests (%d tokens) could not be written to %s and is lost",
                len(self._unwritten),
                tokens,
                self.db.path,
            )
        if self._disk():
            log.warning(
                "LLM usage of %d requests stays in %s, written when the bot next starts",
                len(self._disk()),
                self.data_dir / usage_spill.FILE_NAME,
            )

    def _disk(self) -> list[Spent]:
        """The rows held on disk (read again after this ledger changed them)."""
        if self._on_disk is None:
            self._on_disk = usage_spill.held_rows(self.data_dir)
        return self._on_disk

    def _held(self) -> list[Spent]:
        """The rows not in the database yet: held in memory or on disk, or in a write still under way."""
        return self._unwritten + self._writing + self._disk()

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
        # SQLite gives the bare columns of the row holding max(id): the latest written.
        latest_query = (
            select(LlmUsage.task, func.max(LlmUsage.id), LlmUsage.time, LlmUsage.ok, LlmUsage.error)
            .where(LlmUsage.time >= day_start, LlmUsage.cancelled.is_(False))
            .group_by(LlmUsage.task)
        )
        async with self.db.read() as session:
            rows = {row[0]: row[1:] for row in (await session.execute(query)).all()}
            latest = {row[0]: (row[2], row[3], row[4]) for row in (await session.execute(latest_query)).all()}
        held_rows = [row for row in self._held() if row.time >= day_start]
        held = _tally(held_rows, hour_start)
        for row in held_rows:
            if not row.cancelled and row.time >= latest.get(row.task, (row.time, True, ""))[0]:
                latest[row.task] = (row.time, row.ok, row.error)
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
                last_error=None if latest.get(task, (0, True, ""))[1] else latest[task][2],
            )
        return result
