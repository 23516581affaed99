"""Topics packed offline get the summary model's digest once it answers (memory.history.redigest and
the history_redigest job), through the real gateway and openai client against the fake server."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select

from bot.config import Settings
from bot.history_setup import redigest_settings, register_history_jobs
from bot.llm import LLMSettings, build_gateway
from bot.llm.gateway import LLMGateway
from memory.clock import ManualClock
from memory.history import source
from memory.history.digest import offline_digest
from memory.history.pack import write_history
from memory.models import ChatHistory, EmbeddingVector, Message
from memory.service import MemoryService
from memory.storage.fts import bm25_search, match_expression
from memory.types import MessageDeletion
from tasks import JobRunner
from tasks.history_redigest import JOB_NAME, HistoryRedigestJob, RedigestSettings
from tests.conftest import T0, chat_ids, make_message
from tests.fakes.gateway import fake_gateway
from tests.fakes.openai_server import Answer, Fail, FakeOpenAI, Hold, answer_json

ON = RedigestSettings(enabled=True, per_run=5, interval=timedelta(minutes=5))
CAMPING = {
    "theme": "周六西湖露营",
    "keywords": ["露营", "帐篷", "西湖"],
    "summary": "小明和小红约定周六去西湖边露营，小明带帐篷。",
    "key_points": ["周六出发", "小明带帐篷"],
}


def gateway(fake: FakeOpenAI, memory: MemoryService, clock: ManualClock, **budget: int) -> LLMGateway:
    return fake_gateway(fake, memory.db, clock, "summary", **budget)


async def offline_row(memory: MemoryService, chat: str, start: int, lines: Sequence[str]) -> int:
    """A ChatHistory row packed offline from `lines` recorded in `chat`, with a vector stored for it."""
    await memory.record_many(
        [make_message(start + n, chat=chat, sender=f"u{n % 2}", text=t) for n, t in enumerate(lines)]
    )
    [chat_id] = await chat_ids(memory, chat)
    async with memory.db.write() as session:
        ids = (await session.scalars(select(Message.id).where(Message.chat_id == chat_id))).all()
        found = await source.by_ids(session, list(ids))
        row = await write_history(session, chat_id, found, offline_digest(found), T0)
        session.add(
            EmbeddingVector(
                kind="history",
                ref_id=row.id,
                chat_id=chat_id,
                model="m",
                dimension=1,
                vector=b"\0" * 4,
                created_at=0.0,
            )
        )
        return row.id


async def row(memory: MemoryService, row_id: int) -> ChatHistory | None:
    async with memory.db.read() as session:
        return await session.get(ChatHistory, row_id)


async def found_by_words(memory: MemoryService, words: str) -> list[int]:
    match = match_expression(words, "all")
    assert match is not None
    async with memory.db.read() as session:
        return [rowid for rowid, _ in await bm25_search(session, "chat_history_fts", match, 10)]


async def vectors(memory: MemoryService, row_id: int) -> int:
    async with memory.db.read() as session:
        query = select(func.count(EmbeddingVector.id)).where(
            EmbeddingVector.kind == "history", EmbeddingVector.ref_id == row_id
        )
        return int((await session.execute(query)).scalar_one())


HIKE = ["周六去西湖边玩吧", "好啊我带帐篷", "记得带防蚊液", "那就早上八点出发"]
SECRET = ["下周体检结果出来了", "血压有点高", "医生说要少吃盐"]


async def test_an_offline_topic_gets_the_models_digest_from_its_own_chat_only(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    hike = await offline_row(memory, "g1", 1, HIKE)
    other = await offline_row(memory, "g2", 50, SECRET)
    before = await row(memory, hike)
    assert before is not None and before.provenance == "offline"
    assert await found_by_words(memory, "露营") == []
    fake_llm.default = lambda _body: answer_json(CAMPING)
    llm = gateway(fake_llm, memory, clock)
    try:
        done = await HistoryRedigestJob(memory.db, lambda: ON, llm).run(T0)
    finally:
        await llm.close()
    assert (done.stored, done.tried, done.stopped) == (2, 0, None)
    after = await row(memory, hike)
    assert after is not None and after.provenance == "llm"
    assert (after.theme, after.summary) == (CAMPING["theme"], CAMPING["summary"])
    assert after.theme != before.theme and after.summary != before.summary
    assert after.source_message_ids == before.source_message_ids
    assert after.original_text == before.original_text
    assert set(await found_by_words(memory, "露营 帐篷")) == {hike, other}
    assert await vectors(memory, hike) == 0, "the backfill embeds the new digest"
    # Each request held one chat's messages: the newest topic (the other chat) first.
    prompts = [str(r.messages[-1]["content"]) for r in fake_llm.chat_requests]
    assert len(prompts) == 2
    assert "血压" in prompts[0] and "帐篷" not in prompts[0]
    assert "帐篷" in prompts[1] and "血压" not in prompts[1]


async def test_a_topic_changed_while_the_model_thinks_is_not_overwritten(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """A deletion rebuilds the row offline while the model answers about the old messages: the answer
    is not stored, and the rebuilt row is still due and gets its digest at the next run."""
    hike = await offline_row(memory, "g1", 1, HIKE)
    held = Hold(answer_json(CAMPING))
    fake_llm.script(held)
    llm = gateway(fake_llm, memory, clock)
    try:
        job = HistoryRedigestJob(memory.db, lambda: ON, llm)
        running = asyncio.create_task(job.run(T0))
        await held.reached.wait()
        assert await memory.delete(MessageDeletion("test", "g1", "m3"))
        rebuilt = await row(memory, hike)
        held.release.set()
        done = await running
        assert (done.stored, done.stopped) == (0, None)
        after = await row(memory, hike)
        assert rebuilt is not None and after is not None
        assert (after.provenance, after.theme, after.summary) == (
            "offline",
            rebuilt.theme,
            rebuilt.summary,
        )
        assert len(after.source_message_ids) == 3
        fake_llm.default = lambda _body: answer_json(CAMPING)
        done = await job.run(T0 + timedelta(minutes=5))
    finally:
        await llm.close()
    assert done.stored == 1
    assert "防蚊液" not in str(fake_llm.chat_requests[-1].messages[-1]["content"])
    final = await row(memory, hike)
    assert final is not None and (final.provenance, final.theme) == ("llm", CAMPING["theme"])


async def test_a_failing_model_leaves_topics_offline_and_waits_longer_each_time(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    hike = await offline_row(memory, "g1", 1, HIKE)
    fake_llm.default = lambda _body: Fail(500)
    llm = gateway(fake_llm, memory, clock)
    job = HistoryRedigestJob(memory.db, lambda: ON, llm)
    try:
        done = await job.run(T0)
        assert done.stopped is not None and len(fake_llm.chat_requests) == 1
        await job.run(T0 + timedelta(minutes=4))  # within the first wait (one interval)
        assert len(fake_llm.chat_requests) == 1
        await job.run(T0 + timedelta(minutes=5))
        assert len(fake_llm.chat_requests) == 2
        await job.run(T0 + timedelta(minutes=14))  # the wait doubled to ten minutes
        assert len(fake_llm.chat_requests) == 2
        current = await row(memory, hike)
        assert current is not None and current.provenance == "offline" and current.digest_tried is None
        fake_llm.default = lambda _body: answer_json(CAMPING)
        done = await job.run(T0 + timedelta(minutes=15))
    finally:
        await llm.close()
    assert done.stored == 1 and len(fake_llm.chat_requests) == 3


async def test_an_unusable_answer_marks_the_topic_tried_and_it_is_not_asked_again(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    hike = await offline_row(memory, "g1", 1, HIKE)
    fake_llm.default = lambda _body: Answer("这不是 JSON")
    llm = gateway(fake_llm, memory, clock)
    job = HistoryRedigestJob(memory.db, lambda: ON, llm)
    try:
        done = await job.run(T0)
        asked = len(fake_llm.chat_requests)
        assert (done.stored, done.tried, done.stopped) == (0, 1, None)
        fake_llm.default = lambda _body: answer_json(CAMPING)
        done = await job.run(T0 + timedelta(minutes=5))
    finally:
        await llm.close()
    assert (done.stored, done.tried) == (0, 0) and len(fake_llm.chat_requests) == asked
    current = await row(memory, hike)
    assert current is not None and current.provenance == "offline"
    assert current.digest_tried == current.source_message_ids


async def test_over_budget_nothing_is_asked(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    hike = await offline_row(memory, "g1", 1, HIKE)
    llm = gateway(fake_llm, memory, clock, tokens_per_hour=100)
    await llm.ledger.record("summary", "fake", 90, 20, True)
    try:
        await llm.refresh()
        job = HistoryRedigestJob(memory.db, lambda: ON, llm)
        for minutes in (0, 5, 10):
            await job.run(T0 + timedelta(minutes=minutes))
    finally:
        await llm.close()
    assert fake_llm.chat_requests == []
    current = await row(memory, hike)
    assert current is not None and current.provenance == "offline"


async def test_without_a_summary_model_in_use_nothing_happens(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    hike = await offline_row(memory, "g1", 1, HIKE)
    fake_llm.default = lambda _body: answer_json(CAMPING)
    disabled = build_gateway(LLMSettings(enabled=False), memory.db, clock)
    configured = gateway(fake_llm, memory, clock)
    summaries_off = redigest_settings(Settings.model_validate({"topics": {"llm_summary": False}}))
    try:
        runs: list[Any] = [
            HistoryRedigestJob(memory.db, lambda: ON, None).run(T0),
            HistoryRedigestJob(memory.db, lambda: ON, disabled).run(T0),
            HistoryRedigestJob(memory.db, lambda: summaries_off, configured).run(T0),
        ]
        for run in runs:
            assert (await run).stored == 0
    finally:
        await disabled.close()
        await configured.close()
    assert fake_llm.chat_requests == []
    current = await row(memory, hike)
    assert current is not None and current.provenance == "offline"


async def test_the_job_is_registered_with_the_topic_settings(
    memory: MemoryService, clock: ManualClock
) -> None:
    settings = Settings.model_validate({"topics": {"llm_summary": True, "redigest_per_run": 3}})
    runner = JobRunner(clock)
    register_history_jobs(runner, memory.db, lambda: settings, None)
    assert await runner.run_job(JOB_NAME)
    assert runner.failures[JOB_NAME] == 0
    assert redigest_settings(settings) == RedigestSettings(True, 3, timedelta(minutes=5), "tfidf")


async def test_a_blank_summary_is_an_unusable_answer_not_an_empty_digest(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """A summary of only spaces passed the schema's `min_length=1` and was stored stripped: the row
    became an "llm" digest with an empty summary, never asked again. It is now a bad answer: repaired
    once, then the row stays offline (with its own summary) and is marked tried."""
    hike = await offline_row(memory, "g1", 1, HIKE)
    before = await row(memory, hike)
    assert before is not None and before.summary
    fake_llm.default = lambda _body: answer_json({**CAMPING, "summary": " \n\t "})
    llm = gateway(fake_llm, memory, clock)
    try:
        done = await HistoryRedigestJob(memory.db, lambda: ON, llm).run(T0)
    finally:
        await llm.close()
    assert (done.stored, done.tried) == (0, 1)
    assert len(fake_llm.chat_requests) == 2, "asked once and repaired once"
    after = await row(memory, hike)
    assert after is not None and after.provenance == "offline"
    assert after.summary == before.summary
