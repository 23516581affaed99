"""The topic check's LLM path through the real gateway and openai client, against the fake server:
foreign ids dropped, broken JSON repaired or abandoned for the offline path, a budget cap honoured."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from sqlalchemy import select

from bot.llm.gateway import LLMGateway
from memory.clock import ManualClock
from memory.models import TopicCacheEntry
from memory.service import MemoryService
from memory.topics.check import TopicCheck
from tests.conftest import T0, make_message
from tests.fakes.gateway import fake_gateway
from tests.fakes.openai_server import Answer, FakeOpenAI, Raw, answer_json
from tests.memory.topics.test_check import SMALL

LLM_CHECK = dataclasses.replace(SMALL, use_llm=True)


def gateway(fake: FakeOpenAI, memory: MemoryService, clock: ManualClock, **budget: int) -> LLMGateway:
    return fake_gateway(fake, memory.db, clock, "topic", **budget)


async def titles(memory: MemoryService) -> dict[str, list[int]]:
    async with memory.db.read() as session:
        rows = (await session.scalars(select(TopicCacheEntry))).all()
    return {row.title: row.message_ids for row in rows}


async def test_foreign_ids_from_the_model_are_dropped(
    memory: MemoryService, clock, fake_llm: FakeOpenAI
) -> None:
    await memory.record_many([make_message(n, text=f"午饭 {n}") for n in range(1, 6)])
    fake_llm.script(answer_json({"topics": [{"topic": "午饭", "message_ids": [1, 2, 3, 4, 5, 404]}]}))
    llm = gateway(fake_llm, memory, clock)
    try:
        report = await TopicCheck(memory.db, LLM_CHECK, llm).run_chat(1, T0 + timedelta(hours=1))
    finally:
        await llm.close()
    assert report.path == ["count:llm"] and report.dropped_ids == 1
    assert await titles(memory) == {"午饭": [1, 2, 3, 4, 5]}
    assert "[1]" in fake_llm.chat_requests[0].messages[-1]["content"]


async def test_json_broken_twice_falls_back_offline(
    memory: MemoryService, clock, fake_llm: FakeOpenAI
) -> None:
    await memory.record_many(
        [make_message(n, text=f"火锅 {n}", reply_to=f"m{n - 1}" if n > 1 else None) for n in range(1, 6)]
    )
    fake_llm.script(Answer("topics: 火锅 (not json)"), Answer("```json\n{broken\n```"))
    llm = gateway(fake_llm, memory, clock)
    try:
        report = await TopicCheck(memory.db, LLM_CHECK, llm).run_chat(1, T0 + timedelta(hours=1))
    finally:
        await llm.close()
    assert len(fake_llm.chat_requests) == 2, "one answer and one repair round"
    assert report.path == ["count:offline"]
    assert sorted(i for ids in (await titles(memory)).values() for i in ids) == [1, 2, 3, 4, 5]


async def test_budget_cap_makes_the_job_fall_back_offline(
    memory: MemoryService, clock, fake_llm: FakeOpenAI
) -> None:
    llm = gateway(fake_llm, memory, clock, tokens_per_hour=100)
    await llm.ledger.record("topic", "fake", 90, 20, True)
    await memory.record_many([make_message(n, text=f"爬山 {n}") for n in range(1, 6)])
    try:
        await llm.refresh()
        assert not llm.available("topic")
        report = await TopicCheck(memory.db, LLM_CHECK, llm).run_chat(1, T0 + timedelta(hours=1))
    finally:
        await llm.close()
    assert fake_llm.chat_requests == [], "over budget: no request is sent"
    assert report.path == ["count:offline"]
    assert sum(len(ids) for ids in (await titles(memory)).values()) == 5


async def test_an_endpoint_answering_no_completion_falls_back_offline(
    memory: MemoryService, clock, fake_llm: FakeOpenAI
) -> None:
    """A proxy's HTML page under status 200 is no answer: the batch is placed offline, not lost."""
    await memory.record_many([make_message(n, text=f"爬山 {n}") for n in range(1, 6)])
    fake_llm.script(Raw("<html>502 bad gateway</html>", content_type="text/html"))
    llm = gateway(fake_llm, memory, clock)
    try:
        report = await TopicCheck(memory.db, LLM_CHECK, llm).run_chat(1, T0 + timedelta(hours=1))
    finally:
        await llm.close()
    assert report.path == ["count:offline"]
    assert sum(len(ids) for ids in (await titles(memory)).values()) == 5
