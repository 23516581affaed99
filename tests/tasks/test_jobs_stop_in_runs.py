"""Jargon discovery and the topic check's split and placement go run by run (memory.offload), each run
one worker-thread call: a job cancelled at shutdown stops after the run in hand rather than after a
whole window of long messages, leaves nothing half-written and its cursor where the next start reads
the window again; and cut in runs or not, they find the same."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from memory import offload
from memory.clock import ManualClock
from memory.history import terms
from memory.jargon import discovery
from memory.models import JobState
from memory.service import MemoryService
from memory.storage import Database
from memory.topics import check
from memory.topics.check import TopicCheck, TopicCheckSettings
from tasks.jargon_mining import JOB_NAME, JargonMiningJob
from tests.conftest import T0, make_message
from tests.memory.topics.test_check import LLM_SETTINGS, FakeLLM, cached, chain
from tests.tasks.test_jargon_mining import LINES, SETTINGS, _entries

BATCH = TopicCheckSettings(batch_size=12, max_wait=timedelta(hours=1), min_messages=3)


class Held:
    """`module.name` replaced by a pass-through that stops the first call on a worker thread until
    `release` is set, and counts the calls."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> None:
        self.started, self.release, self.finished = threading.Event(), threading.Event(), threading.Event()
        self.calls = 0
        step: Callable[..., Any] = getattr(module, name)

        def held(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            self.started.set()
            self.release.wait()
            try:
                return step(*args, **kwargs)
            finally:
                self.finished.set()

        monkeypatch.setattr(module, name, held)

    async def cancel_when_reached(self, job: asyncio.Task[Any]) -> None:
        """Cancel `job` once the held call runs, then let that call finish."""
        await asyncio.to_thread(self.started.wait)
        job.cancel()
        self.release.set()
        with pytest.raises(asyncio.CancelledError):
            await job
        await asyncio.to_thread(self.finished.wait)


async def _cursor(memory: MemoryService, job: str) -> int | None:
    async with memory.db.read() as session:
        state = (await session.scalars(select(JobState).where(JobState.job == job))).one_or_none()
    return None if state is None else state.cursor


async def test_cancelled_jargon_mining_stops_after_the_run_in_hand_and_mines_the_window_again(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offload, "RUN_CHARS", 1)  # one message a run
    await memory.record_many(make_message(n, sender=f"u{n % 4}", text=t) for n, t in enumerate(LINES, 1))
    held = Held(monkeypatch, discovery, "_spans_of")
    job = JargonMiningJob(memory.db, lambda: SETTINGS)
    await held.cancel_when_reached(asyncio.create_task(job.run(T0)))
    await asyncio.sleep(0.2)  # time for a run that should not start
    assert held.calls == 1, "no run after the one in hand"
    assert await _entries(memory) == {} and await _cursor(memory, JOB_NAME) is None, "nothing half-done"
    report = await job.run(T0)
    assert report.chats == 1
    assert await _entries(memory) == {"绝绝子": 5}, "the window mined once, whole"
    assert await _cursor(memory, JOB_NAME) == len(LINES)


def _topics(entries: list[Any]) -> list[tuple[object, ...]]:
    return [(e.title, e.thread_keys, e.message_ids, e.terms, e.provenance) for e in entries]


def _batch() -> list[Any]:
    return [
        *chain(1, 4, "周末去九溪爬山，记得带水"),
        *chain(300, 4, "午饭吃黄焖鸡还是兰州拉面"),  # hours later: a topic of its own
        make_message(600, sender="u4", text="明天的会议改到下午三点"),
        make_message(601, sender="u5", text="九溪那条路周末人多吗"),
    ]


async def _checked(path: Path, settings: TopicCheckSettings, llm: FakeLLM | None) -> list[tuple[object, ...]]:
    db = await Database.open(path)
    try:
        memory = MemoryService(db, ManualClock(T0))
        await memory.record_many(_batch())
        report = await TopicCheck(db, settings, llm).run_chat(1, T0 + timedelta(hours=12))
        assert report.batches == 1
        return _topics(await cached(db))
    finally:
        await db.close()


def _llm() -> FakeLLM:
    """The model names two topics and leaves messages 9 and 10 out (placed offline)."""
    return FakeLLM(
        lambda _task, _m: {
            "topics": [
                {"topic": "周末爬山", "message_ids": [1, 2, 3, 4]},
                {"topic": "午饭", "message_ids": [5, 6, 7, 8]},
            ]
        }
    )


@pytest.mark.parametrize("path", ["offline", "llm"])
async def test_topics_split_and_placed_in_runs_are_those_of_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    settings = BATCH if path == "offline" else replace(LLM_SETTINGS, batch_size=12)
    whole = await _checked(tmp_path / "whole", settings, _llm() if path == "llm" else None)
    assert len(whole) >= 2
    monkeypatch.setattr(offload, "RUN_CHARS", 1)  # one message a run
    assert await _checked(tmp_path / "runs", settings, _llm() if path == "llm" else None) == whole


@pytest.mark.parametrize(("module", "step"), [(check, "split_threads"), (terms, "terms_of")])
async def test_a_cancelled_topic_check_stops_after_the_run_in_hand_and_checks_the_batch_again(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch, module: object, step: str
) -> None:
    """Held in the split (one run: a message) or in the placement's weighing (one call: a message)."""
    monkeypatch.setattr(offload, "RUN_CHARS", 1)
    await memory.record_many(_batch())
    held = Held(monkeypatch, module, step)
    topics = TopicCheck(memory.db, BATCH)
    await held.cancel_when_reached(asyncio.create_task(topics.run_chat(1, T0 + timedelta(hours=12))))
    await asyncio.sleep(0.2)  # time for a run that should not start
    assert held.calls == 1, "no run after the one in hand"
    assert await cached(memory.db) == [] and await _cursor(memory, check.JOB) is None, "nothing half-done"
    report = await topics.run_chat(1, T0 + timedelta(hours=12))
    assert (report.batches, report.messages) == (1, len(_batch()))
    placed = sorted(i for entry in await cached(memory.db) for i in entry.message_ids)
    assert placed == list(range(1, len(_batch()) + 1)), "every message placed once"
