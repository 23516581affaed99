"""A chat merge committed while a background job waits on the model (`qunyi chats merge` from another
process while the bot runs, or the bot following a supergroup upgrade): the job writes nothing for a
chat merged away, and does not move its cursor past the messages merged into the chat it read."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta

from sqlalchemy import select

from memory.chat_merge import merge_chats
from memory.clock import ManualClock
from memory.jargon import dictionary
from memory.jargon.inference import run_inference
from memory.models import ChatHistory, JobState, PersonFact, PersonTimelineEntry, TopicCacheEntry
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.service import MemoryService
from memory.storage import Database
from memory.storage.fts import INDEX_JOB
from memory.topics.check import TopicCheck
from tests.conftest import T0, chat_ids, make_message
from tests.fakes.openai_server import FakeOpenAI, Hold, answer_json
from tests.memory.jargon.jargon_helpers import NOW, mine, record
from tests.memory.jargon.test_jargon_dictionary import THRESHOLDS
from tests.memory.test_deletion_races import meanwhile, model, pack_meanwhile, person_answer
from tests.memory.topics.test_check import SMALL

LATER = T0 + timedelta(hours=1)


def topics(*ids: int) -> Hold:
    """A held answer of the topic model putting messages `ids` on one topic."""
    return Hold(answer_json({"topics": [{"topic": "爬山", "message_ids": list(ids)}]}))


async def test_the_topic_check_of_a_chat_merged_away_meanwhile_writes_nothing(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """The check of a chat never checked wrote its topics and thread state for a chat that no longer
    existed (a foreign-key failure of the whole run)."""
    texts = ["周六爬山", "去哪座山", "香山吧", "几点出发", "八点"]
    await memory.record_many([make_message(n, chat="old", text=t) for n, t in enumerate(texts, 1)])
    await memory.record(make_message(9, chat="new", text="新群"))
    old, new = await chat_ids(memory, "old", "new")
    held = topics(1, 2, 3, 4, 5)
    fake_llm.script(held)
    async with model(fake_llm, memory, clock) as llm:
        check = TopicCheck(memory.db, dataclasses.replace(SMALL, use_llm=True), llm)
        await meanwhile(held, check.run_chat(old, LATER), lambda: merge_chats(memory.db, old, new, now=0.0))
    async with memory.db.read() as session:
        cached = (await session.scalars(select(TopicCacheEntry.chat_id))).all()
        states = (await session.scalars(select(JobState.chat_id).where(JobState.job != INDEX_JOB))).all()
    assert (cached, states) == ([], [])
    after = await TopicCheck(memory.db, SMALL).run_chat(new, LATER, force=True)
    assert after.messages == 6


async def test_the_topic_check_reads_the_messages_merged_in_while_it_waited(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """A merge into a checked chat keeps its cursor when the merged chat's messages all came after it;
    the check that waited on the model then moved the cursor past them, and they were never read."""
    offline = TopicCheck(memory.db, SMALL)
    await memory.record_many([make_message(n, chat="new") for n in range(1, 6)])
    assert (await offline.run_chat(1, LATER, force=True)).messages == 5
    await memory.record_many([make_message(n, chat="old") for n in range(6, 9)])
    await memory.record_many([make_message(n, chat="new") for n in range(9, 14)])
    new, old = await chat_ids(memory, "new", "old")
    held = topics(9, 10, 11, 12, 13)
    fake_llm.script(held)
    async with model(fake_llm, memory, clock) as llm:
        check = TopicCheck(memory.db, dataclasses.replace(SMALL, use_llm=True), llm)
        await meanwhile(held, check.run_chat(new, LATER), lambda: merge_chats(memory.db, old, new, now=0.0))
    after = await offline.run_chat(new, LATER, force=True)
    assert after.messages == 8, "the old group's messages were passed over"


async def test_a_topic_packed_while_its_chat_is_merged_is_written_to_the_chat_it_went_into(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """The topic moved with the merge, but its ChatHistory row was written for the chat read before
    the summary (a foreign-key failure: that chat no longer existed)."""
    await memory.record_many([make_message(n, chat="old", text=f"爬山第{n}句") for n in range(1, 6)])
    await memory.record(make_message(9, chat="new", text="新群"))
    old, new = await chat_ids(memory, "old", "new")
    assert (await TopicCheck(memory.db, SMALL).run_chat(old, LATER, force=True)).messages == 5
    await pack_meanwhile(
        fake_llm, memory, clock, (old, LATER, "爬山"), lambda: merge_chats(memory.db, old, new, now=0.0)
    )
    async with memory.db.read() as session:
        histories = (await session.execute(select(ChatHistory.chat_id, ChatHistory.theme))).all()
    assert [tuple(h) for h in histories] == [(new, "爬山")]


async def test_people_read_in_a_chat_merged_away_meanwhile_get_their_facts_in_the_chat_it_went_into(
    memory: MemoryService, db: Database, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """Consolidation of a chat never consolidated wrote facts, events and its cursor for a chat that no
    longer existed (a foreign-key failure of the whole run)."""
    async with model(fake_llm, memory, clock) as llm:
        people = PersonMemory(db, lambda: PersonsConfig(use_llm=True), llm)
        people.attach(memory)
        said = await memory.record(make_message(1, chat="old", text="我喜欢猫"))
        await memory.record(make_message(2, chat="new", text="新群"))
        old, new = await chat_ids(memory, "old", "new")
        held = person_answer((said.message_id, "likes", "猫"), events=((said.message_id, "养了一只猫"),))
        fake_llm.script(held, held.then)
        await meanwhile(
            held, people.consolidator.run_chat(old, LATER), lambda: merge_chats(db, old, new, now=0.0)
        )
        async with db.read() as session:
            assert (
                await session.scalars(select(JobState.chat_id).where(JobState.job != INDEX_JOB))
            ).all() == []
        await people.consolidator.run_chat(new, LATER)
    async with db.read() as session:
        facts = (await session.execute(select(PersonFact.chat_id, PersonFact.key))).all()
        events = (await session.execute(select(PersonTimelineEntry.chat_id, PersonTimelineEntry.text))).all()
    assert [tuple(f) for f in facts] == [(new, "likes")]
    assert [tuple(e) for e in events] == [(new, "养了一只猫")]


async def test_jargon_inference_gives_way_when_a_merge_folds_its_entry_meanwhile(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """Both chats had their own entry of 开炉; the merge folded the old group's into the new group's
    while the model read the new group's evidence alone, and that meaning was stored (its threshold
    used up), so the old group's use of the term was never read. The entry now stays due and the next
    run reads both groups' evidence."""
    new_ids = await record(memory, 0, ["今晚开炉", "开炉吗", "开炉!"], chat="new")
    old_ids = await record(memory, 10, ["周五开炉吃毛肚", "开炉去海底捞"], chat="old")
    new, old = await chat_ids(memory, "new", "old")
    entry = await mine(memory, new, "开炉", new_ids, scope="chat")
    await mine(memory, old, "开炉", old_ids, scope="chat")
    held = Hold(answer_json({"no_information": False, "meaning": "开始做事"}))
    fake_llm.script(held, answer_json({"meaning": "点火"}), answer_json({"same": False}))
    async with model(fake_llm, memory, clock) as llm:
        first = asyncio.ensure_future(run_inference(memory.db, llm, THRESHOLDS, NOW, limit=1))
        await meanwhile(held, first, lambda: merge_chats(memory.db, old, new, now=NOW))
        async with memory.db.read() as session:
            waited = await dictionary.get(session, entry)
        fake_llm.script(
            answer_json({"no_information": False, "meaning": "吃火锅"}),
            answer_json({"meaning": "点火"}),
            answer_json({"same": False}),
        )
        again = await run_inference(memory.db, llm, THRESHOLDS, NOW)
    assert waited is not None and (waited.meaning, waited.last_inference_count) == ("", 0)
    asked = fake_llm.chat_requests[-3].messages[-1]["content"]
    async with memory.db.read() as session:
        after = await dictionary.get(session, entry)
    assert (first.result().stored, again.stored, "海底捞" in asked) == (0, 1, True)
    assert after is not None and (after.meaning, after.count, after.last_inference_count) == ("吃火锅", 5, 4)
