"""Jargon discovery, the topic check's split and placement (the model's left-out messages included),
topic packing and the full-text index go run by run (memory.offload), each run one worker-thread call:
a job cancelled at shutdown stops after the run in hand rather than after a whole window of long
messages, leaves nothing half-written and its cursor where the next start reads the window again; and
cut in runs or not, they find the same."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from memory import offload
from memory.clock import ManualClock
from memory.history import pack, terms
from memory.history.digest import KeywordMethod
from memory.history.pack import PackOptions
from memory.jargon import discovery
from memory.models import JobState
from memory.service import MemoryService
from memory.storage import Database, fts
from memory.text import index_text
from memory.topics import check
from memory.topics.check import TopicCheck, TopicCheckSettings
from tasks.jargon_mining import JOB_NAME, JargonMiningJob
from tests.conftest import T0, make_message
from tests.memory.topics.test_check import LLM_SETTINGS, FakeLLM, cached, chain, history_rows
from tests.tasks.test_jargon_mining import LINES, SETTINGS, _entries

BATCH = TopicCheckSettings(batch_size=12, max_wait=timedelta(hours=1), min_messages=3)


class Held:
    """`module.name` replaced by a pass-through that stops call number `at` (the first by default) on a
    worker thread until `release` is set, and counts the calls; `args` are those of the held call.

    The event loop's worker threads become one: work handed off runs there in the order handed, so what
    is handed off after the held call finishes runs only once the worker has done all it had in hand."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: object, name: str, at: int = 1) -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
        self.started, self.finished = asyncio.Event(), asyncio.Event()
        self.release = threading.Event()
        self.calls = 0
        self.args: tuple[Any, ...] = ()
        step: Callable[..., Any] = getattr(module, name)

        def held(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls != at:
                return step(*args, **kwargs)
            assert threading.current_thread() is not threading.main_thread(), "held on the event loop"
            self.args = args
            loop.call_soon_threadsafe(self.started.set)
            self.release.wait()
            try:
                return step(*args, **kwargs)
            finally:
                loop.call_soon_threadsafe(self.finished.set)

        monkeypatch.setattr(module, name, held)

    async def cancel_when_reached(self, job: asyncio.Task[Any]) -> None:
        """Cancel `job` once the held call runs, then let that call finish and the worker go idle.

        A run that followed the held one on the worker (the rest of the work in one thread call) has
        started, and been counted, before the no-op handed off last returns: no wall-clock wait."""
        await self.started.wait()
        job.cancel()
        self.release.set()
        with pytest.raises(asyncio.CancelledError):
            await job
        await self.finished.wait()
        await asyncio.to_thread(lambda: None)


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
    assert held.calls == 1, "no run after the one in hand"
    assert await cached(memory.db) == [] and await _cursor(memory, check.JOB) is None, "nothing half-done"
    report = await topics.run_chat(1, T0 + timedelta(hours=12))
    assert (report.batches, report.messages) == (1, len(_batch()))
    placed = sorted(i for entry in await cached(memory.db) for i in entry.message_ids)
    assert placed == list(range(1, len(_batch()) + 1)), "every message placed once"


async def test_a_check_cancelled_while_weighing_what_the_model_left_out_checks_the_batch_again(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model leaves messages 9 and 10 out: held in the first run that weighs them (after one call
    a message for the batch), nothing is placed offline and the batch is checked again, once."""
    monkeypatch.setattr(offload, "RUN_CHARS", 1)
    await memory.record_many(_batch())
    held = Held(monkeypatch, terms, "terms_of", at=len(_batch()) + 1)
    topics = TopicCheck(memory.db, replace(LLM_SETTINGS, batch_size=12), _llm())
    await held.cancel_when_reached(asyncio.create_task(topics.run_chat(1, T0 + timedelta(hours=12))))
    assert held.calls == len(_batch()) + 1, "no run after the one in hand"
    assert await cached(memory.db) == [] and await _cursor(memory, check.JOB) is None, "nothing half-done"
    report = await topics.run_chat(1, T0 + timedelta(hours=12))
    assert (report.batches, report.path) == (1, ["time:llm"])
    placed = sorted(i for entry in await cached(memory.db) for i in entry.message_ids)
    assert placed == list(range(1, len(_batch()) + 1)), "every message placed once"


def _long_batch() -> list[Any]:
    """`_batch` with each text said over and over: long enough that each message is indexed off the
    event loop, on the same topics."""
    return [replace(m, text="，".join([m.text] * 200)) for m in _batch()]


async def _packed(path: Path, method: KeywordMethod) -> tuple[list[tuple[object, ...]], dict[str, object]]:
    """The ChatHistory rows packed from `_long_batch` and the full-text index of messages and rows."""
    db = await Database.open(path)
    try:
        await MemoryService(db, ManualClock(T0)).record_many(_long_batch())
        settings = replace(BATCH, pack_options=PackOptions(keyword_method=method))
        topics = TopicCheck(db, settings)
        await topics.run_chat(1, T0 + timedelta(hours=12))
        packed = await topics.pack_ready(1, T0 + timedelta(hours=12), everything=True)
        assert sum(p.history_id is not None for p in packed) >= 2
        rows = await history_rows(db)
        async with db.read() as session:
            index = {
                table: await fts.indexed_tokens(session, table, ids)
                for table, ids in (
                    ("messages_fts", list(range(1, len(_batch()) + 1))),
                    (pack.HISTORY_FTS, [r.id for r in rows]),
                )
            }
        found = [(r.theme, r.keywords, r.summary, r.key_points, r.source_message_ids) for r in rows]
        return found, index
    finally:
        await db.close()


@pytest.mark.parametrize("method", ["tfidf", "textrank"])
async def test_topics_packed_and_indexed_in_runs_are_those_of_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: KeywordMethod
) -> None:
    whole = await _packed(tmp_path / "whole", method)
    assert all(whole[1].values()), "messages and rows indexed"
    monkeypatch.setattr(offload, "RUN_CHARS", 1)  # one message (one index row) a run
    assert await _packed(tmp_path / "runs", method) == whole


async def test_a_cancelled_packing_stops_after_the_run_in_hand_and_packs_the_topic_again(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offload, "RUN_CHARS", 1)
    await memory.record_many(_batch())
    topics = TopicCheck(memory.db, BATCH)
    await topics.run_chat(1, T0 + timedelta(hours=12))
    waiting = _topics(await cached(memory.db))
    assert waiting and await history_rows(memory.db) == []
    held = Held(monkeypatch, terms, "terms_of")
    packing = asyncio.create_task(topics.pack_ready(1, T0 + timedelta(hours=12), everything=True))
    await held.cancel_when_reached(packing)
    assert held.calls == 1, "no run after the one in hand"
    assert await history_rows(memory.db) == [], "nothing half-done"
    assert _topics(await cached(memory.db)) == waiting, "every topic still waits to be packed"
    packed = await topics.pack_ready(1, T0 + timedelta(hours=12), everything=True)
    assert len(packed) == len(waiting) and await cached(memory.db) == []
    sources = sorted(i for row in await history_rows(memory.db) for i in row.source_message_ids)
    worth = [ids for _, _, ids, _, _ in waiting if len(ids) >= PackOptions().min_topic_messages]
    assert len(worth) >= 2 and sources == sorted(i for ids in worth for i in ids), "every topic packed once"


async def test_a_cancelled_indexing_stops_after_the_run_in_hand_and_writes_nothing(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offload, "RUN_CHARS", 1)  # one row a run
    rows = [(n, "，".join([f"周末去九溪爬山 {n}"] * 200)) for n in range(1, 11)]
    held = Held(monkeypatch, fts, "_tokenized")

    async def index() -> None:
        async with memory.db.write() as session:
            await fts.index_rows(session, pack.HISTORY_FTS, rows)

    await held.cancel_when_reached(asyncio.create_task(index()))
    assert held.args == (rows[:1],) and held.calls == 1, "one row in hand, no run after it"
    assert await _indexed(memory) == {}, "nothing half-written"
    await index()
    assert await _indexed(memory) == {n: index_text(body).split() for n, body in rows}, (
        "every row indexed once"
    )


async def _indexed(memory: MemoryService) -> dict[int, list[str]]:
    """The tokens of each row of the ChatHistory full-text index."""
    async with memory.db.read() as session:
        rowids = (await session.execute(text(f"SELECT rowid FROM {pack.HISTORY_FTS}"))).scalars().all()
        return await fts.indexed_tokens(session, pack.HISTORY_FTS, list(rowids))
