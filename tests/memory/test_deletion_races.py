"""A message deleted while a background job waits on the model: what the job then writes does not
bring the deleted words back (topics and ChatHistory, people's facts and timeline, jargon)."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta

from sqlalchemy import select

from bot.llm import LLMGateway, LLMSettings, build_gateway
from memory.clock import ManualClock
from memory.models import ChatHistory, TopicCacheEntry
from memory.service import MemoryService
from memory.topics.check import TopicCheck
from memory.types import MessageDeletion
from tests.conftest import T0, make_message
from tests.fakes.openai_server import FakeOpenAI, Hold, answer_json
from tests.memory.topics.test_check import SMALL

PHONE = "13800000000"


def gateway(fake: FakeOpenAI, memory: MemoryService, clock: ManualClock) -> LLMGateway:
    settings = LLMSettings(
        enabled=True, base_url=fake.base_url, model="fake", max_retries=0, backoff_seconds=0
    )
    return build_gateway(settings, memory.db, clock)


async def test_a_message_deleted_while_the_topic_model_thinks_stays_out_of_the_topic(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    texts = ["周六爬山", "去哪座山", f"我的手机号{PHONE}", "香山吧", "好的"]
    await memory.record_many([make_message(n, text=t) for n, t in enumerate(texts, 1)])
    held = Hold(answer_json({"topics": [{"topic": f"手机号{PHONE}", "message_ids": [1, 2, 3, 4, 5]}]}))
    fake_llm.script(held, answer_json({"topics": [{"topic": "爬山", "message_ids": [1, 2, 4, 5]}]}))
    llm = gateway(fake_llm, memory, clock)
    check = TopicCheck(memory.db, dataclasses.replace(SMALL, use_llm=True), llm)
    try:
        job = asyncio.create_task(check.run_chat(1, T0 + timedelta(hours=1)))
        await held.reached.wait()
        assert await memory.delete(MessageDeletion("test", "g1", "m3"))
        held.release.set()
        await job
        async with memory.db.read() as session:
            cached = (await session.scalars(select(TopicCacheEntry))).all()
            assert [(c.title, c.message_ids) for c in cached] == [], "the placement read a deleted message"
        await check.run_chat(1, T0 + timedelta(hours=1), force=True)
        async with memory.db.read() as session:
            cached = (await session.scalars(select(TopicCacheEntry))).all()
            assert [(c.title, c.message_ids) for c in cached] == [("爬山", [1, 2, 4, 5])]
            assert not any("手机号" in term for c in cached for term in c.terms)
        await check.pack_ready(1, T0 + timedelta(hours=2), everything=True)
    finally:
        await llm.close()
    async with memory.db.read() as session:
        packed = (await session.scalars(select(ChatHistory))).all()
    assert [h.source_message_ids for h in packed] == [[1, 2, 4, 5]]
    assert PHONE not in str([(h.theme, h.keywords, h.summary, h.original_text) for h in packed])
