"""A message deleted while a background job waits on the model: what the job then writes does not
bring the deleted words back (topics and ChatHistory, people's facts and timeline, jargon)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import TypeVar

from sqlalchemy import select, text

from bot.llm import LLMGateway, LLMSettings, build_gateway
from memory.clock import ManualClock
from memory.jargon import dictionary
from memory.jargon.discovery import DiscoveryParams
from memory.models import (
    ChatHistory,
    JargonEvidence,
    JobState,
    PersonFact,
    PersonTimelineEntry,
    TopicCacheEntry,
)
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.service import MemoryService
from memory.storage import Database
from memory.topics.check import TopicCheck
from memory.types import MessageDeletion
from tasks.jargon_mining import JargonMiningJob, MiningSettings
from tests.conftest import T0, make_message
from tests.fakes.openai_server import FakeOpenAI, Hold, answer_json
from tests.memory.topics.test_check import SMALL

T = TypeVar("T")

PHONE = "13800000000"


async def meanwhile(held: Hold, job: Awaitable[object], act: Callable[[], Awaitable[T]]) -> T:
    """Run `job` until the fake model holds its request, do `act` meanwhile, then let the job finish;
    `act`'s result."""
    running = asyncio.ensure_future(job)
    await held.reached.wait()
    done = await act()
    held.release.set()
    await running
    return done


@asynccontextmanager
async def model(fake: FakeOpenAI, memory: MemoryService, clock: ManualClock) -> AsyncIterator[LLMGateway]:
    """A gateway to the fake model, closed afterwards."""
    settings = LLMSettings(
        enabled=True, base_url=fake.base_url, model="fake", max_retries=0, backoff_seconds=0
    )
    llm = build_gateway(settings, memory.db, clock)
    try:
        yield llm
    finally:
        await llm.close()


async def test_a_message_deleted_while_the_topic_model_thinks_stays_out_of_the_topic(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    texts = ["周六爬山", "去哪座山", f"我的手机号{PHONE}", "香山吧", "好的"]
    await memory.record_many([make_message(n, text=t) for n, t in enumerate(texts, 1)])
    held = Hold(answer_json({"topics": [{"topic": f"手机号{PHONE}", "message_ids": [1, 2, 3, 4, 5]}]}))
    fake_llm.script(held, answer_json({"topics": [{"topic": "爬山", "message_ids": [1, 2, 4, 5]}]}))
    async with model(fake_llm, memory, clock) as llm:
        check = TopicCheck(memory.db, dataclasses.replace(SMALL, use_llm=True), llm)
        assert await meanwhile(
            held,
            check.run_chat(1, T0 + timedelta(hours=1)),
            lambda: memory.delete(MessageDeletion("test", "g1", "m3")),
        )
        async with memory.db.read() as session:
            cached = (await session.scalars(select(TopicCacheEntry))).all()
            assert [(c.title, c.message_ids) for c in cached] == [], "the placement read a deleted message"
        await check.run_chat(1, T0 + timedelta(hours=1), force=True)
        async with memory.db.read() as session:
            cached = (await session.scalars(select(TopicCacheEntry))).all()
            assert [(c.title, c.message_ids) for c in cached] == [("爬山", [1, 2, 4, 5])]
            assert not any("手机号" in term for c in cached for term in c.terms)
        await check.pack_ready(1, T0 + timedelta(hours=2), everything=True)
    async with memory.db.read() as session:
        packed = (await session.scalars(select(ChatHistory))).all()
    assert [h.source_message_ids for h in packed] == [[1, 2, 4, 5]]
    assert PHONE not in str([(h.theme, h.keywords, h.summary, h.original_text) for h in packed])


async def pack_meanwhile(
    fake: FakeOpenAI,
    memory: MemoryService,
    clock: ManualClock,
    packing: tuple[int, datetime, str],
    act: Callable[[], Awaitable[object]],
) -> None:
    """Pack every cached topic of chat `packing[0]` at `packing[1]`, the summary model answering the
    theme `packing[2]` (summary "大家约了<theme>") once `act` has run while it held the request."""
    chat_id, now, theme = packing
    summary = {"theme": theme, "keywords": [theme], "summary": f"大家约了{theme}", "key_points": []}
    held = Hold(answer_json(summary))
    fake.script(held)
    async with model(fake, memory, clock) as llm:
        options = dataclasses.replace(SMALL.pack_options, use_llm=True)
        check = TopicCheck(memory.db, dataclasses.replace(SMALL, pack_options=options), llm)
        await meanwhile(held, check.pack_ready(chat_id, now, everything=True), act)


def person_answer(*facts: tuple[int, str, str], events: tuple[tuple[int, str], ...] = ()) -> Hold:
    """A held answer of the person model: facts (message id, key, value) and events (message id, text)."""
    return Hold(
        answer_json(
            {
                "facts": [{"message_id": i, "key": k, "value": v} for i, k, v in facts],
                "events": [{"message_id": i, "text": t} for i, t in events],
            }
        )
    )


async def people_facts(db: Database) -> tuple[list[tuple[int, str, str, int | None]], list[str]]:
    """(person, key, value, message) of every fact, and the text of every timeline event."""
    async with db.read() as session:
        facts = (await session.scalars(select(PersonFact).order_by(PersonFact.id))).all()
        events = (await session.scalars(select(PersonTimelineEntry))).all()
    return [(f.person_id, f.key, f.value, f.message_id) for f in facts], [e.text for e in events]


async def test_a_message_deleted_while_the_person_model_reads_it_leaves_no_fact_or_event(
    memory: MemoryService, db: Database, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    async with model(fake_llm, memory, clock) as llm:
        people = PersonMemory(db, lambda: PersonsConfig(use_llm=True), llm)
        people.attach(memory)
        gone = await memory.record(make_message(1, text="我住在杭州滨江，上个月刚搬过来"))
        kept = await memory.record(make_message(2, text="我喜欢猫"))
        held = person_answer(
            (gone.message_id, "location", "杭州滨江"),
            (kept.message_id, "likes", "猫"),
            events=((gone.message_id, "搬到了杭州滨江"),),
        )
        fake_llm.script(held, person_answer((kept.message_id, "likes", "猫")).then)
        assert await meanwhile(
            held,
            people.consolidator.run(T0 + timedelta(hours=1)),
            lambda: memory.delete(MessageDeletion("test", "g1", "m1")),
        )
        assert await people_facts(db) == ([], []), "nothing written from a batch read before the deletion"
        await people.consolidator.run(T0 + timedelta(hours=2))
    assert await people_facts(db) == ([(kept.person_id, "likes", "猫", kept.message_id)], [])


async def test_a_person_forgotten_while_the_person_model_reads_their_words_stays_forgotten(
    memory: MemoryService, db: Database, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    async with model(fake_llm, memory, clock) as llm:
        people = PersonMemory(db, lambda: PersonsConfig(use_llm=True), llm)
        people.attach(memory)
        said = await memory.record(make_message(1, text="我在字节跳动上班，上个月刚入职"))
        held = person_answer(
            (said.message_id, "employer", "字节跳动"), events=((said.message_id, "入职字节跳动"),)
        )
        fake_llm.script(held)
        await meanwhile(
            held,
            people.consolidator.run(T0 + timedelta(hours=1)),
            lambda: people.admin.forget(said.person_id, remove_messages=False, now=T0 + timedelta(hours=1)),
        )
        await people.consolidator.run(T0 + timedelta(hours=2))
    assert await people_facts(db) == ([], [])


async def test_a_message_deleted_while_the_jargon_model_reads_it_is_no_evidence(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    lines = ["绝绝子 这个好看", "今天也绝绝子 暗号xyzzy", "真的绝绝子啊", *(f"闲聊 {n}" for n in range(7))]
    await memory.record_many(make_message(n, sender=f"u{n % 3}", text=t) for n, t in enumerate(lines))
    found = [{"content": "绝绝子", "message_id": str(i)} for i in (1, 2, 3)]
    held = Hold(answer_json([*found, {"content": "暗号xyzzy", "message_id": "2"}]))
    fake_llm.script(held, answer_json([found[0], found[2]]))
    async with model(fake_llm, memory, clock) as llm:
        settings = MiningSettings(
            discovery=DiscoveryParams(min_lift=0.0, min_df=2), extractor="llm", min_new_messages=5
        )
        mining = JargonMiningJob(memory.db, lambda: settings)
        mining.llm = llm
        assert await meanwhile(
            held, mining.run(T0), lambda: memory.delete(MessageDeletion("test", "g1", "m1"))
        )
        await mining.run(T0 + timedelta(minutes=5))
    async with memory.db.read() as session:
        entries = {e.content: e.count for e in await dictionary.list_entries(session)}
        evidence = list((await session.scalars(select(JargonEvidence.message_id))).all())
    assert entries == {"绝绝子": 2} and sorted(evidence) == [1, 3]


async def test_a_message_deleted_while_the_topic_model_thinks_stays_out_of_the_thread_state(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    texts = ["周六爬山", f"我的手机号{PHONE}", "去哪座山", "香山吧", "好的"]
    await memory.record_many([make_message(n, text=t) for n, t in enumerate(texts, 1)])
    check = TopicCheck(memory.db, SMALL)
    await check.run_chat(1, T0 + timedelta(hours=1))  # offline: m2 is in the thread state
    await memory.record_many([make_message(n, text=f"八点出发 {n}") for n in range(6, 11)])
    held = Hold(answer_json({"topics": [{"topic": "出发", "message_ids": [6, 7, 8, 9, 10]}]}))
    fake_llm.script(held)
    async with model(fake_llm, memory, clock) as llm:
        check = TopicCheck(memory.db, dataclasses.replace(SMALL, use_llm=True), llm)
        assert await meanwhile(
            held,
            check.run_chat(1, T0 + timedelta(hours=1)),
            lambda: memory.delete(MessageDeletion("test", "g1", "m2")),
        )
    async with memory.db.read() as session:
        states = (await session.scalars(select(JobState))).all()
    assert PHONE not in str([s.data for s in states])


async def test_a_topic_packed_while_a_speaker_asks_to_be_forgotten_shows_them_without_their_names(
    memory: MemoryService, db: Database, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """`people forget` (messages kept) takes the names off their messages and off the topics packed
    from them; a topic whose summary the model was writing meanwhile was written with the names read
    before, in its verbatim text, participants and full-text entry."""
    people = PersonMemory(db, lambda: PersonsConfig(), None)
    people.attach(memory)
    said = [
        await memory.record(
            make_message(n, sender=f"u{n % 2}", sender_name=("小明", "Zorblax")[n % 2], text=f"爬山{n}")
        )
        for n in range(1, 6)
    ]
    assert (await TopicCheck(memory.db, SMALL).run_chat(said[0].chat_id, T0 + timedelta(hours=1))).messages
    later = T0 + timedelta(hours=2)
    await pack_meanwhile(
        fake_llm,
        memory,
        clock,
        (said[0].chat_id, later, "周末爬山"),
        lambda: people.admin.forget(said[0].person_id, remove_messages=False, now=later),
    )
    async with memory.db.read() as session:
        packed = (await session.scalars(select(ChatHistory))).all()
        indexed = (await session.execute(text("SELECT body FROM chat_history_fts"))).scalars().all()
    assert [(h.theme, h.summary) for h in packed] == [("周末爬山", "大家约了周末爬山")], "the model's summary"
    assert "u1: 爬山1" in packed[0].original_text and "小明: 爬山2" in packed[0].original_text
    assert "zorblax" not in str([packed[0].original_text, packed[0].participants, indexed]).casefold()
