"""A job asking a model again about rows done offline (memory.offline_redo), a few per run, waiting
longer after each run the model failed (tasks.failure_pause)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Generic, Protocol, TypeVar

from memory.offline_redo import RedoRun
from memory.ports import LLMPort
from tasks.failure_pause import FailurePause
from tasks.registry import JobSpec

PAUSE_MAX_SECONDS = 3600.0
"""The longest wait before asking a model that failed again (the wait doubles from one interval)."""


class RedoSettings(Protocol):
    """What every redo job reads from its settings at each run: `enabled` is the model's use at all,
    `per_run` 0 turns redoing off, `interval` is the job's cadence and the first pause."""

    @property
    def enabled(self) -> bool: ...

    @property
    def per_run(self) -> int: ...

    @property
    def interval(self) -> timedelta: ...


S = TypeVar("S", bound=RedoSettings)


class OfflineRedoJob(Generic[S]):
    """The job object; register `spec()` with the JobRunner, or call `run(now)` directly. `redo` does
    one run's work with the model, the settings in force and the run's time."""

    def __init__(
        self,
        name: str,
        task: str,
        settings: Callable[[], S],
        llm: LLMPort | None,
        redo: Callable[[LLMPort, S, datetime], Awaitable[RedoRun]],
    ) -> None:
        self.name = name
        self.task = task
        self.settings = settings
        self.llm = llm
        self.redo = redo
        self.pause = FailurePause(name.replace("_", " "), PAUSE_MAX_SECONDS)

    def spec(self) -> JobSpec:
        """The runner entry, at the settings' interval."""
        return JobSpec(self.name, lambda: self.settings().interval, self.run)

    async def run(self, now: datetime) -> RedoRun:
        """One run: nothing without the model in use and available, or while pausing after a failed
        run; else up to `per_run` rows redone."""
        settings = self.settings()
        stamp = now.timestamp()
        llm = self.llm
        if not settings.enabled or settings.per_run <= 0 or llm is None or not llm.available(self.task):
            return RedoRun()
        if self.pause.waits(stamp):
            return RedoRun()
        done = await self.redo(llm, settings, now)
        self.pause.record(stamp, settings.interval.total_seconds(), done.stopped)
        return done
