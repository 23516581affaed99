"""Running jobs: live under APScheduler's AsyncIOScheduler, or driven by a clock in simulated time.

Both modes start jobs the same way: a job never overlaps itself (a turn that finds it running is
skipped), failures are logged and do not stop the scheduler, and shutdown lets a running job finish
(or cancels it, rolling back its transaction).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from memory.clock import Clock
from memory.embeddings.local import EmbedderUnavailable
from memory.storage import DatabaseLocked, DatabaseWriteFailed
from tasks.registry import JobSpec

log = logging.getLogger(__name__)

# Failures of the machine or of a service, not of the code: their message says all there is to say
# (a database another process holds, a full disk, an embeddings endpoint down), and they recur at
# every turn while they last, so a traceback each time would bury the log.
_STATED_FAILURES = (DatabaseLocked, DatabaseWriteFailed, EmbedderUnavailable)


class JobRunner:
    """The one registry of jobs and the one place that runs them."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.jobs: dict[str, JobSpec] = {}
        self.runs: dict[str, int] = {}
        self.failures: dict[str, int] = {}
        self._running: dict[str, asyncio.Task[object]] = {}
        self._next_due: dict[str, datetime] = {}
        self._scheduler: AsyncIOScheduler | None = None
        self._scheduled_seconds: dict[str, float] = {}  # each job's interval on the live schedule
        self._closing = False

    def register(self, spec: JobSpec) -> None:
        if spec.name in self.jobs:
            raise ValueError(f"job {spec.name!r} is registered twice")
        self.jobs[spec.name] = spec
        self.runs[spec.name] = 0
        self.failures[spec.name] = 0

    def _start(self, name: str) -> asyncio.Task[object] | None:
        """Start a job as its own task, or None when it is already running or shutdown began."""
        if self._closing or name in self._running:
            return None
        spec = self.jobs[name]
        task = asyncio.create_task(spec.run(self.clock.now()), name=f"job:{name}")
        self._running[name] = task
        task.add_done_callback(lambda done: self._finished(name, done))
        return task

    async def run_job(self, name: str) -> bool:
        """Run a job now unless it is already running or shutdown began. True when it ran.

        The job runs as its own task: if the caller stops waiting (APScheduler cancels what it
        started when it shuts down), the job runs on and `shutdown` gives it its grace."""
        task = self._start(name)
        if task is None:
            return False
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            return False  # the job was cancelled, or runs on without this caller
        except Exception:
            pass  # logged and counted by _finished
        return True

    async def _turn(self, name: str) -> None:
        """A live turn: start the job and return. A turn that finds the job still running (a run
        longer than its interval) is skipped; APScheduler, had it awaited the run, would log a
        warning naming no job at each such turn."""
        if self._start(name) is None and not self._closing:
            log.debug("job %s is still running; this turn is skipped", name)

    def _finished(self, name: str, task: asyncio.Task[object]) -> None:
        self._running.pop(name, None)
        if task.cancelled():
            log.warning("job %s was cancelled; its open transaction was rolled back", name)
            return
        error = task.exception()
        if isinstance(error, _STATED_FAILURES):
            self.failures[name] += 1
            log.error("job %s failed: %s; it will run again at its next turn", name, error)
        elif isinstance(error, Exception):
            self.failures[name] += 1
            log.error("job %s failed; it will run again at its next turn", name, exc_info=error)
        self.runs[name] += 1

    async def run_due(self, now: datetime) -> list[str]:
        """Simulated time: run every job whose turn came by `now`, once each (missed turns coalesce)."""
        ran = []
        for name, spec in self.jobs.items():
            due = self._next_due.get(name)
            if due is None:
                self._next_due[name] = now + spec.interval()
                continue
            if now >= due:
                await self.run_job(name)
                self._next_due[name] = now + spec.interval()
                ran.append(name)
        return ran

    async def run_all(self) -> None:
        """Run every job once now (used at the end of a replay to let the daemons catch up)."""
        for name in self.jobs:
            await self.run_job(name)

    def start(self) -> None:
        """Live mode: schedule every job on APScheduler inside the running event loop.

        A turn missed while the process could not run (the machine suspended, the loop blocked) runs
        as soon as it can, however late, and the turns missed together run once (coalesced)."""
        scheduler = AsyncIOScheduler()
        for name, spec in self.jobs.items():
            seconds = _seconds(spec.interval())
            scheduler.add_job(
                self._turn,
                IntervalTrigger(seconds=seconds),
                args=[name],
                id=name,
                max_instances=1,
                coalesce=True,
                misfire_grace_time=None,
            )
            self._scheduled_seconds[name] = seconds
        scheduler.start()
        self._scheduler = scheduler

    def reschedule(self) -> None:
        """Apply new intervals (after a config reload) to the live schedule.

        Only a job whose interval changed is rescheduled (its next turn then comes one new interval
        from now): rescheduling restarts the countdown, so a reload touching anything else must leave
        the other jobs' turns where they were, or reloads more frequent than a job's interval would
        keep it from ever running."""
        if self._scheduler is None:
            return
        for name, spec in self.jobs.items():
            seconds = _seconds(spec.interval())
            if seconds != self._scheduled_seconds.get(name):
                self._scheduler.reschedule_job(name, trigger=IntervalTrigger(seconds=seconds))
                self._scheduled_seconds[name] = seconds

    async def shutdown(self, grace: timedelta) -> None:
        """Stop scheduling; wait up to `grace` for running jobs, then cancel what is left."""
        self._closing = True
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
            self._scheduler = None
        running = list(self._running.values())
        if not running:
            return
        _done, pending = await asyncio.wait(running, timeout=grace.total_seconds())
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


def _seconds(interval: timedelta) -> float:
    return max(interval.total_seconds(), 1.0)
