import asyncio
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from apscheduler.events import (
    EVENT_JOB_EXECUTED,
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    EVENT_JOB_SUBMITTED,
    JobEvent,
)
from sqlalchemy import func, select

from memory.clock import ManualClock
from memory.models import JobState
from memory.retention import RetentionPolicy
from memory.storage import Database
from tasks import JobRunner, JobSpec
from tasks.forgetting import forgetting_job
from tests.conftest import T0, database_locked
from tests.waiting import WAIT


async def test_jobs_fire_in_simulated_time_without_sleeping(clock: ManualClock) -> None:
    runner = JobRunner(clock)
    seen = []

    async def job(now):
        seen.append(now)

    runner.register(JobSpec("tick", lambda: timedelta(minutes=5), job))
    await runner.run_due(clock.now())
    assert seen == []
    clock.advance(timedelta(minutes=4))
    await runner.run_due(clock.now())
    assert seen == []
    clock.advance(timedelta(minutes=1))
    await runner.run_due(clock.now())
    assert seen == [T0 + timedelta(minutes=5)]
    clock.advance(timedelta(hours=3))
    await runner.run_due(clock.now())
    assert len(seen) == 2, "missed turns coalesce into one run"


async def test_a_job_never_overlaps_itself(clock: ManualClock) -> None:
    runner = JobRunner(clock)
    gate = asyncio.Event()
    starts = 0

    async def slow(_now):
        nonlocal starts
        starts += 1
        await gate.wait()

    runner.register(JobSpec("slow", lambda: timedelta(seconds=1), slow))
    first = asyncio.create_task(runner.run_job("slow"))
    await asyncio.sleep(0)
    assert await runner.run_job("slow") is False
    gate.set()
    assert await first is True
    assert starts == 1


async def test_a_failing_job_is_counted_and_does_not_stop_others(clock: ManualClock) -> None:
    runner = JobRunner(clock)
    ran = []

    async def boom(_now):
        raise RuntimeError("boom")

    async def fine(_now):
        ran.append(1)

    runner.register(JobSpec("boom", lambda: timedelta(seconds=1), boom))
    runner.register(JobSpec("fine", lambda: timedelta(seconds=1), fine))
    await runner.run_all()
    assert runner.failures["boom"] == 1 and ran == [1]


async def test_a_job_meeting_a_locked_database_logs_one_line_not_a_traceback(
    tmp_path: Path, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process holding the database longer than busy_timeout (`qunyi compact`, a backup tool)
    failed every job turn with a three-part traceback (sqlite3, SQLAlchemy, DatabaseLocked): a job
    ticking every few seconds filled the log with them. The turn fails with one line saying why."""
    db = await Database.open(tmp_path / "data", busy_timeout_ms=50)
    runner = JobRunner(clock)
    retention = RetentionPolicy({"llm_usage": timedelta(days=30)})
    runner.register(forgetting_job(db, lambda: None, lambda: timedelta(minutes=5), lambda: retention))
    try:
        with database_locked(db.path), caplog.at_level(logging.INFO, logger="tasks.runner"):
            assert await runner.run_job("forgetting") is True
    finally:
        await db.close()
    assert runner.failures["forgetting"] == 1
    [record] = [r for r in caplog.records if r.name == "tasks.runner"]
    assert record.exc_info is None and "stayed locked" in record.getMessage()
    assert "will run again at its next turn" in record.getMessage()


async def test_shutdown_mid_job_leaves_no_partial_rows(db: Database, clock: ManualClock) -> None:
    runner = JobRunner(clock)
    halfway = asyncio.Event()

    async def writer(_now):
        async with db.write() as session:
            for chat in range(5):
                session.add(JobState(job="w", chat_id=chat, cursor=chat, last_run=0.0, data={}))
                await session.flush()
                if chat == 2:
                    halfway.set()
                    await asyncio.sleep(3600)

    runner.register(JobSpec("writer", lambda: timedelta(seconds=1), writer))
    task = asyncio.create_task(runner.run_job("writer"))
    await halfway.wait()
    await runner.shutdown(timedelta(seconds=0.05))
    await task
    async with db.read() as session:
        written = select(func.count()).select_from(JobState).where(JobState.job == "w")
        assert (await session.execute(written)).scalar_one() == 0
    assert await runner.run_job("writer") is False, "no new runs after shutdown"


async def test_live_scheduler_runs_jobs_and_reschedules(clock: ManualClock) -> None:
    runner = JobRunner(clock)
    fired = asyncio.Event()

    async def job(_now):
        fired.set()

    interval = [timedelta(seconds=1)]
    runner.register(JobSpec("live", lambda: interval[0], job))
    runner.start()
    try:
        await asyncio.wait_for(fired.wait(), timeout=WAIT)
        interval[0] = timedelta(seconds=30)
        runner.reschedule()
    finally:
        await runner.shutdown(timedelta(seconds=1))
    assert runner.runs["live"] >= 1


async def test_a_live_job_slower_than_its_interval_skips_its_turns_without_a_warning_each(
    clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A job outlasting its interval (the jargon job, every 5 s, waiting on a model that times out)
    never overlaps itself; but APScheduler, which awaited the whole run, logged a WARNING naming no
    job ('Execution of job "JobRunner.run_job …" skipped: maximum number of running instances
    reached') at every turn it came to meanwhile. A turn that finds the job running is skipped quietly."""
    runner = JobRunner(clock)
    started, release = asyncio.Event(), asyncio.Event()
    starts = 0

    async def slow(_now):
        nonlocal starts
        starts += 1
        started.set()
        await release.wait()

    runner.register(JobSpec("slow", lambda: timedelta(hours=1), slow))
    runner.start()
    scheduler = runner._scheduler
    assert scheduler is not None
    loop = asyncio.get_running_loop()
    turns: list[asyncio.Future[int]] = [loop.create_future(), loop.create_future()]

    def seen(event: JobEvent) -> None:
        waiting = next((turn for turn in turns if not turn.done()), None)
        if waiting is not None:
            waiting.set_result(event.code)

    scheduler.add_listener(seen, EVENT_JOB_SUBMITTED | EVENT_JOB_MAX_INSTANCES)
    try:
        with caplog.at_level(logging.WARNING, logger="apscheduler"):
            for turn in turns:  # two turns: the first starts the job, the second finds it running
                scheduler.modify_job("slow", next_run_time=datetime.now(UTC))
                scheduler.wakeup()
                assert await turn == EVENT_JOB_SUBMITTED
                await started.wait()
        release.set()
    finally:
        await runner.shutdown(timedelta(seconds=5))
    assert starts == 1 and runner.runs["slow"] == 1
    assert [r.getMessage() for r in caplog.records if r.name.startswith("apscheduler")] == []


async def test_live_shutdown_lets_a_running_job_finish_within_its_grace(clock: ManualClock) -> None:
    """Stopping APScheduler cancels the run it started; the job itself must still get its grace."""
    runner = JobRunner(clock)
    started, release = asyncio.Event(), asyncio.Event()
    finished = []

    async def job(_now):
        started.set()
        await release.wait()
        finished.append(True)

    runner.register(JobSpec("live", lambda: timedelta(seconds=1), job))
    runner.start()
    await started.wait()
    stopping = asyncio.create_task(runner.shutdown(timedelta(seconds=600)))
    await asyncio.sleep(0)
    assert not stopping.done(), "shutdown waits for the running job"
    release.set()
    await stopping
    assert finished == [True]
    assert runner.runs["live"] == 1 and runner.failures["live"] == 0


async def test_a_reload_that_keeps_a_jobs_interval_keeps_its_next_turn(clock: ManualClock) -> None:
    """Rescheduling restarts a job's countdown: if every reload did it to every job, reloads more
    frequent than a job's interval (the config watcher reloads on each save) would starve it."""
    runner = JobRunner(clock)

    async def job(_now):
        pass

    hourly, daily = [timedelta(hours=1)], [timedelta(days=1)]
    runner.register(JobSpec("hourly", lambda: hourly[0], job))
    runner.register(JobSpec("daily", lambda: daily[0], job))
    runner.start()
    try:
        assert runner._scheduler is not None
        before = {name: runner._scheduler.get_job(name).next_run_time for name in ("hourly", "daily")}
        await asyncio.sleep(0.01)  # a later "now", so a restarted countdown would show
        hourly[0] = timedelta(hours=2)
        runner.reschedule()
        after = {name: runner._scheduler.get_job(name).next_run_time for name in ("hourly", "daily")}
    finally:
        await runner.shutdown(timedelta(seconds=1))
    assert after["daily"] == before["daily"], "an unchanged interval keeps its turn"
    assert after["hourly"] > before["hourly"] + timedelta(minutes=59), "a changed interval applies"


async def test_a_turn_missed_during_a_suspend_runs_once_when_the_machine_wakes(clock: ManualClock) -> None:
    """After a suspend, the job due half an hour ago runs (once) instead of being dropped as missed
    and waiting for a whole further interval."""
    runner = JobRunner(clock)
    runs = []

    async def job(now):
        runs.append(now)

    runner.register(JobSpec("hourly", lambda: timedelta(hours=1), job))
    runner.start()
    scheduler = runner._scheduler
    assert scheduler is not None
    outcome: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    scheduler.add_listener(
        lambda event: outcome.done() or outcome.set_result(event.code), EVENT_JOB_MISSED | EVENT_JOB_EXECUTED
    )
    try:
        woke = datetime.now(UTC)
        scheduler.modify_job("hourly", next_run_time=woke - timedelta(hours=2, minutes=30))
        scheduler.wakeup()
        code = await outcome
    finally:
        await runner.shutdown(timedelta(seconds=1))
    assert code == EVENT_JOB_EXECUTED, "the missed turn was dropped"
    assert len(runs) == 1, "three missed turns coalesce into one run"
