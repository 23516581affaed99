"""Messages people's consolidation read offline only, because the person model was down, are read by
the model once it answers (memory.persons.relearn and the person_relearn job), through the real
gateway and openai client against the fake server, on a real database."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeVar

import pytest
from pydantic import ValidationError
from sqlalchemy import select

from bot.app import relearn_settings
from bot.config import Settings
from bot.llm import LLMSettings, build_gateway
from bot.llm.gateway import LLMGateway
from memory.clock import ManualClock
from memory.ingest import Recorded
from memory.models import PersonFact, PersonLlmGap, PersonTimelineEntry
from memory.offline_redo import RedoRun
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.service import MemoryService
from memory.storage import Database
from memory.types import MessageDeletion
from tasks.person_relearn import PersonRelearnJob, RelearnSettings
from tests.conftest import T0
from tests.fakes.gateway import fake_gateway
from tests.fakes.openai_server import Answer, Behaviour, Fail, FakeOpenAI, Hold, answer_json
from tests.memory.persons.people_fixtures import Chat

T = TypeVar("T")
ON = RelearnSettings(enabled=True, per_run=5, interval=timedelta(minutes=5))
EVENTS = {"北高峰": "周末爬了北高峰", "西溪": "周末去西溪骑车", "钓鱼": "上周去千岛湖钓鱼"}


def reader(body: dict[str, Any]) -> Behaviour:
    """The model: an event for every message of the prompt naming a place in EVENTS, and a `likes`
    fact for 徒步 when a message says it."""
    facts, events = [], []
    for line in str(body["messages"][-1]["content"]).splitlines():
        found = re.match(r"\[(\d+)\]", line)
        assert found is not None
        message_id = int(found.group(1))
        events += [{"message_id": message_id, "text": text} for word, text in EVENTS.items() if word in line]
        if "徒步" in line:
            facts.append({"message_id": message_id, "key": "likes", "value": "徒步"})
    return answer_json({"facts": facts, "events": events})


async def gaps(db: Database) -> list[PersonLlmGap]:
    async with db.read() as session:
        return list((await session.scalars(select(PersonLlmGap).order_by(PersonLlmGap.id))).all())


async def timeline(db: Database, said: Recorded) -> list[str]:
    async with db.read() as session:
        query = select(PersonTimelineEntry.text).where(
            PersonTimelineEntry.person_id == said.person_id, PersonTimelineEntry.chat_id == said.chat_id
        )
        return sorted((await session.scalars(query)).all())


async def model_facts(db: Database, said: Recorded) -> list[tuple[str, str, int | None]]:
    async with db.read() as session:
        query = select(PersonFact).where(
            PersonFact.person_id == said.person_id,
            PersonFact.chat_id == said.chat_id,
            PersonFact.source == "llm",
        )
        return [(f.key, f.value, f.message_id) for f in (await session.scalars(query)).all()]


def people(memory: MemoryService, llm: LLMGateway) -> PersonMemory:
    persons = PersonMemory(memory.db, lambda: PersonsConfig(use_llm=True), llm)
    persons.attach(memory)
    return persons


def job(persons: PersonMemory, llm: LLMGateway) -> PersonRelearnJob:
    return PersonRelearnJob(persons.db, persons.resolver, lambda: ON, llm)


async def relearn_meanwhile(
    relearn: PersonRelearnJob,
    fake: FakeOpenAI,
    said: list[tuple[Recorded, str]],
    act: Callable[[], Awaitable[T]],
) -> tuple[T, RedoRun]:
    """A run of `relearn` an hour after T0 whose request the model holds while `act` runs, then answers
    as `reader` does a prompt of `said` (each message with the words it holds); `act`'s result and
    what the run did."""
    lines = "\n".join(f"[{message.message_id}] {words}" for message, words in said)
    held = Hold(reader({"messages": [{"content": lines}]}))
    fake.script(held)
    running = asyncio.create_task(relearn.run(T0 + timedelta(hours=1)))
    await held.reached.wait()
    acted = await act()
    held.release.set()
    return acted, await running


async def read_offline(persons: PersonMemory, fake: FakeOpenAI) -> None:
    """A consolidation run while the model fails: what it did not read is noted."""
    fake.default = lambda _body: Fail(500)
    await persons.consolidator.run(T0)


@asynccontextmanager
async def hiker(
    memory: MemoryService, clock: ManualClock, fake: FakeOpenAI
) -> AsyncIterator[tuple[LLMGateway, PersonMemory, Chat, Recorded]]:
    """A gateway to `fake` for task "person" (closed afterwards), people's memory using it, and chat g1
    where u1 said they climbed 北高峰."""
    llm = fake_gateway(fake, memory.db, clock, "person")
    try:
        persons = people(memory, llm)
        g1 = Chat(memory)
        yield llm, persons, g1, await g1.say("u1", "周末去爬了北高峰", card="阿红")
    finally:
        await llm.close()


async def test_messages_read_while_the_model_was_down_are_read_by_it_later_in_their_own_chat(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    llm = fake_gateway(fake_llm, memory.db, clock, "person")
    try:
        persons = people(memory, llm)
        g1, g2 = Chat(memory, "g1"), Chat(memory, "g2")
        hike = await g1.say("u1", "周末去爬了北高峰，腿都废了，我最近迷上了徒步", card="阿红")
        await g1.say("u2", "我住在杭州", card="莉莉")
        fish = await g2.say("u3", "上周去千岛湖钓鱼了", card="老王", minutes=30)
        fake_llm.default = lambda _body: Fail(500)
        report = await persons.consolidator.run(T0)
        assert (report.messages, report.llm_fallbacks, report.llm_gaps) == (3, 2, 2)
        assert await timeline(memory.db, hike) == [] and await model_facts(memory.db, hike) == []
        assert [g.message_ids for g in await gaps(memory.db)] == [
            [hike.message_id, hike.message_id + 1],
            [fish.message_id],
        ]
        asked = len(fake_llm.chat_requests)
        fake_llm.default = reader
        done = await job(persons, llm).run(T0 + timedelta(hours=1))
        again = await job(persons, llm).run(T0 + timedelta(hours=2))
    finally:
        await llm.close()
    assert (done.stored, done.tried, done.stopped) == (2, 0, None)
    assert (again.stored, again.tried) == (0, 0)
    assert await timeline(memory.db, hike) == ["周末爬了北高峰"]
    assert await model_facts(memory.db, hike) == [("likes", "徒步", hike.message_id)]
    assert await timeline(memory.db, fish) == ["上周去千岛湖钓鱼"]
    assert await gaps(memory.db) == []
    # Each request held one chat's messages, the newest chunk (g2's) first; nothing asked twice.
    prompts = [str(r.messages[-1]["content"]) for r in fake_llm.chat_requests[asked:]]
    assert len(prompts) == 2
    assert "千岛湖" in prompts[0] and "北高峰" not in prompts[0]
    assert "北高峰" in prompts[1] and "千岛湖" not in prompts[1]


async def test_a_chunk_whose_message_is_deleted_while_the_model_thinks_is_read_again(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    async with hiker(memory, clock, fake_llm) as (llm, persons, g1, hike):
        ride = await g1.say("u1", "周末去西溪骑车了", card="阿红")
        fake_llm.script(Fail(500))
        assert (await persons.consolidator.run(T0)).llm_gaps == 1
        relearn = job(persons, llm)
        deleted, done = await relearn_meanwhile(
            relearn,
            fake_llm,
            [(hike, "北高峰"), (ride, "西溪")],
            lambda: memory.delete(MessageDeletion("test", "g1", "g1-m2")),
        )
        assert deleted and (done.stored, done.tried) == (0, 0)
        assert await timeline(memory.db, hike) == [], "nothing is written from a deleted message"
        assert len(await gaps(memory.db)) == 1
        fake_llm.default = reader
        done = await relearn.run(T0 + timedelta(hours=2))
    assert done.stored == 1
    assert "西溪" not in str(fake_llm.chat_requests[-1].messages[-1]["content"])
    assert await timeline(memory.db, hike) == ["周末爬了北高峰"]
    assert await gaps(memory.db) == []


async def current_facts(db: Database, said: Recorded) -> list[tuple[str, str, str]]:
    async with db.read() as session:
        query = select(PersonFact).where(
            PersonFact.person_id == said.person_id, PersonFact.superseded_at.is_(None)
        )
        return sorted((f.key, f.value, f.source) for f in (await session.scalars(query)).all())


async def test_a_fact_an_admin_removed_or_replaced_is_not_relearnt_from_the_messages_it_came_from(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """Consolidation read "我喜欢徒步" offline while the model was down (likes 徒步) and noted it for
    the model; an admin removed the fact (`people edit --remove-fact`) or replaced it (`--set-fact
    likes=猫`); the relearn job then asked the model about the same message and wrote the fact back."""
    async with hiker(memory, clock, fake_llm) as (llm, persons, g1, hike):
        likes = await g1.say("u1", "我喜欢徒步", card="阿红")
        other = await g1.say("u2", "我也喜欢徒步", card="莉莉")
        await read_offline(persons, fake_llm)
        assert await current_facts(memory.db, likes) == [("likes", "徒步", "self")]
        await persons.admin.remove_fact(likes.chat_id, likes.person_id, "likes", now=T0)
        await persons.admin.set_fact(other.chat_id, other.person_id, "likes", "猫", now=T0)
        fake_llm.default = reader
        done = await job(persons, llm).run(T0 + timedelta(hours=1))
    assert done.stored == 1
    assert await current_facts(memory.db, likes) == []
    assert await current_facts(memory.db, other) == [("likes", "猫", "admin")]
    assert await timeline(memory.db, hike) == ["周末爬了北高峰"], "the rest of the chunk is read"
    assert await gaps(memory.db) == []


async def test_a_fact_removed_while_the_model_reads_its_message_again_stays_removed(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    async with hiker(memory, clock, fake_llm) as (llm, persons, g1, hike):
        likes = await g1.say("u1", "我喜欢徒步", card="阿红")
        await read_offline(persons, fake_llm)
        relearn = job(persons, llm)
        _, done = await relearn_meanwhile(
            relearn,
            fake_llm,
            [(hike, "北高峰"), (likes, "徒步")],
            lambda: persons.admin.remove_fact(likes.chat_id, likes.person_id, "likes", now=T0),
        )
        assert done.stored == 0
        assert await current_facts(memory.db, likes) == []
        fake_llm.default = reader
        done = await relearn.run(T0 + timedelta(hours=2))
    assert done.stored == 1
    assert "徒步" not in str(fake_llm.chat_requests[-1].messages[-1]["content"])
    assert await current_facts(memory.db, likes) == []
    assert await timeline(memory.db, hike) == ["周末爬了北高峰"]


async def test_a_failing_model_pauses_the_job_and_an_unusable_answer_marks_the_chunk_tried(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    async with hiker(memory, clock, fake_llm) as (llm, persons, _, hike):
        fake_llm.default = lambda _body: Fail(500)
        await persons.consolidator.run(T0)
        relearn = job(persons, llm)
        asked = len(fake_llm.chat_requests)
        done = await relearn.run(T0)
        assert done.stopped is not None and len(fake_llm.chat_requests) == asked + 1
        await relearn.run(T0 + timedelta(minutes=4))  # within the first wait (one interval)
        assert len(fake_llm.chat_requests) == asked + 1
        fake_llm.default = lambda _body: Answer("这不是 JSON")
        done = await relearn.run(T0 + timedelta(minutes=5))
        assert (done.stored, done.tried, done.stopped) == (0, 1, None)
        asked = len(fake_llm.chat_requests)
        fake_llm.default = reader
        done = await relearn.run(T0 + timedelta(minutes=10))
    assert (done.stored, done.tried) == (0, 0) and len(fake_llm.chat_requests) == asked
    assert [g.tried for g in await gaps(memory.db)] == [True]
    assert await timeline(memory.db, hike) == []


async def test_the_model_answering_leaves_no_chunk_and_the_setting_is_checked(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    async with hiker(memory, clock, fake_llm) as (_, persons, _, hike):
        fake_llm.default = reader
        report = await persons.consolidator.run(T0)
    assert (report.llm_calls, report.llm_gaps) == (1, 0) and await gaps(memory.db) == []
    assert await timeline(memory.db, hike) == ["周末爬了北高峰"]
    settings = Settings.model_validate(
        {"persons": {"relearn_per_run": 3, "consolidation_interval_seconds": 60}}
    )
    assert relearn_settings(settings) == RelearnSettings(True, 3, timedelta(minutes=1))
    assert relearn_settings(Settings.model_validate({"persons": {"use_llm": False}})).enabled is False
    with pytest.raises(ValidationError, match="relearn_per_run"):
        Settings.model_validate({"persons": {"relearn_per_run": 101}})


async def test_no_chunk_is_noted_without_a_model_set_up_but_one_is_when_it_is_over_budget(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """A bot never given a model would otherwise note every message its people say, for ever."""
    unset = build_gateway(LLMSettings(enabled=False), memory.db, clock)
    try:
        persons = people(memory, unset)
        g1 = Chat(memory)
        said = await g1.say("u1", "周末去爬了北高峰", card="阿红")
        report = await persons.consolidator.run(T0)
    finally:
        await unset.close()
    assert (report.messages, report.llm_gaps) == (1, 0) and await gaps(memory.db) == []
    capped = fake_gateway(fake_llm, memory.db, clock, "person", tokens_per_hour=1)
    fake_llm.default = reader  # answers the first request, whose tokens use up the hour's budget
    try:
        persons = people(memory, capped)
        await g1.say("u1", "周末去西溪骑车了", card="阿红", minutes=5)
        first = await persons.consolidator.run(T0 + timedelta(minutes=5))
        await g1.say("u1", "上周去千岛湖钓鱼了", card="阿红", minutes=10)
        second = await persons.consolidator.run(T0 + timedelta(minutes=10))
    finally:
        await capped.close()
    assert capped.configured("person")
    assert (first.llm_calls, first.llm_gaps, second.llm_calls, second.llm_gaps) == (1, 0, 0, 1)
    assert len(fake_llm.chat_requests) == 1
    assert [g.message_ids for g in await gaps(memory.db)] == [[said.message_id + 2]]


async def test_no_chunk_is_noted_while_a_cap_of_0_keeps_the_person_model_offline(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """A cap of 0 is how a model is kept on the offline path for good: nothing is owed to it either,
    or every 60 messages people say would add a chunk no run ever takes."""
    for n, cap in enumerate(({"tokens_per_hour": 0}, {"tokens_per_day": 0})):
        off = fake_gateway(fake_llm, memory.db, clock, "person", **cap)
        try:
            persons = people(memory, off)
            await Chat(memory, f"g{n}").say("u1", "周末去爬了北高峰", card="阿红")
            report = await persons.consolidator.run(T0)
        finally:
            await off.close()
        assert not off.configured("person")
        assert (report.messages, report.llm_calls, report.llm_gaps) == (1, 0, 0)
    assert await gaps(memory.db) == [] and fake_llm.chat_requests == []


@pytest.mark.parametrize("model", ["none set up", "not in use"])
async def test_chunks_with_nothing_left_to_read_are_removed_without_a_model(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI, model: str
) -> None:
    """The chunks whose messages were all deleted were removed only by a run asking the model: without
    one set up (or `use_llm` off) they stayed for ever and `qunyi doctor`'s count only grew."""
    async with hiker(memory, clock, fake_llm) as (_, persons, g1, _hike):
        await read_offline(persons, fake_llm)
        await g1.say("u2", "上周去千岛湖钓鱼了", card="小明", minutes=30)
        fake_llm.default = lambda _body: Fail(500)
        await persons.consolidator.run(T0 + timedelta(minutes=30))
    kept = [g.message_ids for g in await gaps(memory.db)]
    assert len(kept) == 2
    assert await memory.delete(MessageDeletion("test", "g1", "g1-m1"))
    unset = build_gateway(LLMSettings(enabled=False), memory.db, clock)
    try:
        settings = replace(ON, enabled=False) if model == "not in use" else ON
        relearning = PersonRelearnJob(
            memory.db, persons.resolver, lambda: settings, None if model == "none set up" else unset
        )
        done = await relearning.run(T0 + timedelta(hours=1))
    finally:
        await unset.close()
    assert done == RedoRun(), "the model was not asked"
    assert [g.message_ids for g in await gaps(memory.db)] == kept[1:], "only the chunk still readable is left"


async def test_a_stored_forward_is_never_shown_to_the_model_as_the_forwarders_own_words(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    async with hiker(memory, clock, fake_llm) as (llm, persons, g1, _hike):
        forward = await g1.say("u2", "我是素食者，住在柏林，周末去爬了北高峰", card="莉莉", forwarded=True)
        own = await g1.say("u2", "上周去千岛湖钓鱼了", card="莉莉")
        await read_offline(persons, fake_llm)
        (gap,) = await gaps(memory.db)
        assert forward.message_id not in gap.message_ids and own.message_id in gap.message_ids
        # The relearn reads a chunk with consolidation's rule: one naming the forward still leaves it out.
        async with memory.db.write() as session:
            stored = await session.get(PersonLlmGap, gap.id)
            assert stored is not None
            stored.message_ids = sorted([*gap.message_ids, forward.message_id])
        asked = len(fake_llm.chat_requests)
        fake_llm.default = reader
        done = await job(persons, llm).run(T0 + timedelta(hours=1))
    assert done.stored == 1
    (prompt,) = [str(r.messages[-1]["content"]) for r in fake_llm.chat_requests[asked:]]
    assert "千岛湖" in prompt and f"[{own.message_id}]" in prompt
    assert "柏林" not in prompt and "素食" not in prompt and f"[{forward.message_id}]" not in prompt
    assert await timeline(memory.db, own) == ["上周去千岛湖钓鱼"], "no 北高峰 from the forward"


async def test_a_message_recorded_before_a_forget_but_dated_after_it_is_not_relearnt(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """The chunk of a message recorded before its sender asked to be forgotten, dated a year after the
    request, was kept and the model asked about it: the event was learnt about them again."""
    async with hiker(memory, clock, fake_llm) as (llm, persons, g1, hike):
        ahead = await g1.say("u1", "周末去西溪骑车了", card="阿红", minutes=365 * 24 * 60)
        await read_offline(persons, fake_llm)
        assert [g.message_ids for g in await gaps(memory.db)] == [[hike.message_id, ahead.message_id]]
        await persons.admin.forget(hike.person_id, remove_messages=False, now=T0 + timedelta(days=1))
        asked = len(fake_llm.chat_requests)
        fake_llm.default = reader
        done = await job(persons, llm).run(T0 + timedelta(days=2))
        assert (done.stored, len(fake_llm.chat_requests)) == (0, asked), "the model is not asked"
        assert await gaps(memory.db) == [], "the chunk has nothing left to read"
        later = await g1.say("u1", "上周去千岛湖钓鱼了", card="阿红", minutes=365 * 24 * 60 + 60)
        await read_offline(persons, fake_llm)
        fake_llm.default = reader
        learnt = await job(persons, llm).run(T0 + timedelta(days=2))
    assert learnt.stored == 1 and [g.message_ids for g in await gaps(memory.db)] == []
    assert await timeline(memory.db, later) == ["上周去千岛湖钓鱼"], "what they say after it is learnt"


async def test_an_edit_after_a_forget_of_a_message_recorded_before_it_is_not_relearnt(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """The edit of a message recorded before its sender asked to be forgotten, dated after the request,
    is recorded under a new id past the request's mark: it was read as said after the request, noted
    while the model was down, and the model asked about it: the event was learnt about them again."""
    async with hiker(memory, clock, fake_llm) as (llm, persons, g1, hike):
        ahead = await g1.say("u1", "今天天气不错", card="阿红", minutes=365 * 24 * 60)
        await persons.admin.forget(hike.person_id, remove_messages=False, now=T0 + timedelta(days=1))
        g1.n -= 1  # the edit comes under the message's own id, with its first date
        edit = await g1.say("u1", "周末去西溪骑车了", card="阿红", minutes=365 * 24 * 60, edited=True)
        assert edit.created and edit.message_id > ahead.message_id
        await read_offline(persons, fake_llm)
        asked = len(fake_llm.chat_requests)
        fake_llm.default = reader
        done = await job(persons, llm).run(T0 + timedelta(days=2))
    assert (done.stored, len(fake_llm.chat_requests)) == (0, asked), "the model is not asked"
    assert await gaps(memory.db) == [] and await timeline(memory.db, edit) == []
