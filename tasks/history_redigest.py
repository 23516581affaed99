"""The re-digest job: topics packed offline get the summary model's digest once it answers
(memory.history.redigest), a few per run, waiting longer after each run the model failed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory.history.digest import KeywordMethod
from memory.history.redigest import TASK, RedigestRun, redigest_offline
from memory.ports import LLMPort
from memory.storage import Database
from tasks.failure_pause import FailurePause
from tasks.registry import JobSpec

JOB_NAME = "history_redigest"
PAUSE_MAX_SECONDS = 3600.0
"""The longest wait before asking a model that failed again (the wait doubles from one interval)."""


@dataclass(frozen=True, slots=True)
class RedigestSettings:
    """What the job needs from `[topics]` (see config.toml): `enabled` is the summary model's use at
    all (`llm_summary`); `per_run` 0 turns re-digesting off."""

    enabled: bool = False
    per_run: int = 5
    interval: timedelta = timedelta(minutes=5)
    keyword_method: KeywordMethod = "tfidf"


class HistoryRedigestJob:
    """The job object; register `spec()` with the JobRunner, or call `run(now)` directly."""

    def __init__(self, db: Database, settings: Callable[[], RedigestSettings], llm: LLMPort | None) -> None:
        self.db = db
        self.settings = settings
        self.llm = llm
        self.pause = FailurePause("topic re-digest", PAUSE_MAX_SECONDS)

    def spec(self) -> JobSpec:
        """The runner entry, at the `[topics]` interval."""
        return JobSpec(JOB_NAME, lambda: self.settings().interval, self.run)

    async def run(self, now: datetime) -> RedigestRun:
        """One run: nothing without a summary model in use and available, or while pausing after a
        failed run; else up to `per_run` offline rows re-digested."""
        settings = self.settings()
        stamp = now.timestamp()
        llm = self.llm
        if not settings.enabled or settings.per_run <= 0 or llm is None or not llm.available(TASK):
            return RedigestRun()
        if self.pause.waits(stamp):
            return RedigestRun()
        done = await redigest_offline(self.db, llm, settings.per_run, settings.keyword_method)
        self.pause.record(stamp, settings.interval.total_seconds(), done.stopped)
        return done
