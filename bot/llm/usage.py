"""Token accounting per task in the `llm_usage` table, and the rolling-window budget checks on it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TypedDict

from sqlalchemy import case, func, select

from bot.llm.settings import Budget
from memory.clock import Clock
from memory.models import LlmUsage
from memory.storage.database import Database
from memory.text import truncate

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
_ERROR_CHARS = 500


class TaskUsage(TypedDict):
    """One task's line in `qunyi doctor`: tokens and calls in the rolling windows, caps, verdict."""

    hour: int
    day: int
    calls: int
    failures: int
    cap_hour: int | None
    cap_day: int | None
    blocked_reason: str | None


def _over(task: str, used: int, cap: int | None, window: str, in_flight: int = 0) -> str | None:
    if cap is not None and used + in_flight >= cap:
        pending = f" and {in_flight:,} reserved by requests in flight" if in_flight else ""
        return f"{task}: {used:,} tokens in the last {window}{pending}, cap {cap:,}"
    return None


class UsageLedger:
    """Persists one row per LLM request and answers "how much did task X spend lately".

    Windows are rolling: the last hour and the last 24 hours before `clock.now()`.
    `calls` and `failures` in `summary()` count HTTP requests over the last day.
    """

    def __init__(self, db: Database, clock: Clock, budgets: Mapping[str, Budget] | None = None) -> None:
        self.db = db
        self.clock = clock
        self.budgets: dict[str, Budget] = dict(budgets or {})

    async def record(
        self,
        task: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        ok: bool,
        error: str = "",
    ) -> None:
        """Persist one request's token counts (zero when nothing came back) and its outcome."""
        row = LlmUsage(
            task=task,
            model=truncate(model, 128),
            prompt_tokens=max(0, int(prompt_tokens)),
            completion_tokens=max(0, int(completion_tokens)),
            ok=ok,
            error=truncate(error, _ERROR_CHARS),
            time=self.clock.now().timestamp(),
        )
        async with self.db.write() as session:
            session.add(row)

    async def used(self, task: str, since: datetime) -> int:
        """Tokens (prompt + completion) spent by `task` from `since` until now."""
        query = select(func.coalesce(func.sum(LlmUsage.prompt_tokens + LlmUsage.completion_tokens), 0)).where(
            LlmUsage.task == task, LlmUsage.time >= since.timestamp()
        )
        async with self.db.read() as session:
            return int((await session.execute(query)).scalar_one())

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
        hour_start = (now - HOUR).timestamp()
        tokens = LlmUsage.prompt_tokens + LlmUsage.completion_tokens
        query = (
            select(
                LlmUsage.task,
                func.sum(case((LlmUsage.time >= hour_start, tokens), else_=0)),
                func.sum(tokens),
                func.count(),
                func.sum(case((LlmUsage.ok.is_(False), 1), else_=0)),
            )
            .where(LlmUsage.time >= (now - DAY).timestamp())
            .group_by(LlmUsage.task)
        )
        async with self.db.read() as session:
            rows = {row[0]: row[1:] for row in (await session.execute(query)).all()}
        result: dict[str, TaskUsage] = {}
        for task in sorted(set(rows) | set(self.budgets)):
            hour, day, calls, failures = (int(v or 0) for v in rows.get(task, (0, 0, 0, 0)))
            budget = self.budgets.get(task, Budget())
            reason = _over(task, hour, budget.tokens_per_hour, "hour") or _over(
                task, day, budget.tokens_per_day, "day"
            )
            result[task] = TaskUsage(
                hour=hour,
                day=day,
                calls=calls,
                failures=failures,
                cap_hour=budget.tokens_per_hour,
                cap_day=budget.tokens_per_day,
                blocked_reason=reason,
            )
        return result
