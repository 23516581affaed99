"""A `qunyi people merge` landing while consolidation or relearn waits on the person model: what the
model found is written to the survivor, nothing to the merged-away id, nothing lost
(memory.persons.survivors); the merge goes through the real admin path, the model is the fake server
holding its answer."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import func, select

from memory.clock import ManualClock
from memory.ingest import Recorded
from memory.models import Person, PersonFact, PersonTimelineEntry
from memory.service import MemoryService
from memory.storage import Database
from tasks.person_relearn import PersonRelearnJob, RelearnSettings
from tests.conftest import T0
from tests.fakes.gateway import fake_gateway
from tests.fakes.openai_server import Fail, FakeOpenAI, Hold
from tests.memory.persons.people_fixtures import Chat
from tests.tasks.test_person_relearn import gaps, model_facts, people, reader, timeline

SAID = "周末去爬了北高峰，我最近迷上了徒步"


def held_reading(said: Recorded) -> Hold:
    """The model's reading of `said`, held until released."""
    return Hold(reader({"messages": [{"content": f"[{said.message_id}] {SAID}"}]}))


async def rows_about(db: Database, person_id: int) -> int:
    async with db.read() as session:
        counted = 0
        for table in (PersonFact, PersonTimelineEntry):
            query = select(func.count()).select_from(table).where(table.person_id == person_id)
            counted += int((await session.execute(query)).scalar_one())
        return counted


async def test_consolidation_writes_to_the_survivor_of_a_merge_made_while_the_model_thinks(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    llm = fake_gateway(fake_llm, memory.db, clock, "person")
    try:
        persons = people(memory, llm)
        g1 = Chat(memory)
        main = await g1.say("u9", "大家好", card="阿红")
        alt = await g1.say("u1", SAID, card="阿红小号")
        assert main.person_id is not None and alt.person_id is not None
        held = held_reading(alt)
        fake_llm.script(held)
        running = asyncio.create_task(persons.consolidator.run(T0))
        await held.reached.wait()
        await persons.admin.merge(main.person_id, alt.person_id)
        held.release.set()
        report = await running
    finally:
        await llm.close()
    assert (report.messages, report.llm_calls, report.events_added) == (2, 1, 1)
    assert await timeline(memory.db, main) == ["周末爬了北高峰"]
    assert await model_facts(memory.db, main) == [("likes", "徒步", alt.message_id)]
    assert await rows_about(memory.db, alt.person_id) == 0
    async with memory.db.read() as session:
        assert await session.get(Person, alt.person_id) is None


async def test_relearn_writes_to_the_survivor_of_a_merge_made_while_the_model_thinks(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    llm = fake_gateway(fake_llm, memory.db, clock, "person")
    try:
        persons = people(memory, llm)
        g1 = Chat(memory)
        main = await g1.say("u9", "大家好", card="阿红")
        alt = await g1.say("u1", SAID, card="阿红小号")
        assert main.person_id is not None and alt.person_id is not None
        fake_llm.default = lambda _body: Fail(500)
        assert (await persons.consolidator.run(T0)).llm_gaps == 1
        held = held_reading(alt)
        fake_llm.script(held)
        relearning = PersonRelearnJob(persons.db, persons.resolver, lambda: RelearnSettings(True, 5), llm)
        running = asyncio.create_task(relearning.run(T0 + timedelta(hours=1)))
        await held.reached.wait()
        await persons.admin.merge(main.person_id, alt.person_id)
        held.release.set()
        done = await running
    finally:
        await llm.close()
    assert (done.stored, done.tried) == (1, 0)
    assert await timeline(memory.db, main) == ["周末爬了北高峰"]
    assert await model_facts(memory.db, main) == [("likes", "徒步", alt.message_id)]
    assert await rows_about(memory.db, alt.person_id) == 0
    assert await gaps(memory.db) == []


async def test_a_newcomer_given_the_merged_away_id_meanwhile_gets_nothing(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """SQLite gives the highest id, once deleted, to the next new person: people are told apart by
    their account."""
    llm = fake_gateway(fake_llm, memory.db, clock, "person")
    try:
        persons = people(memory, llm)
        g1 = Chat(memory)
        main = await g1.say("u9", "大家好", card="阿红")
        alt = await g1.say("u1", SAID, card="阿红小号")
        fake_llm.default = lambda _body: Fail(500)
        await persons.consolidator.run(T0)
        held = held_reading(alt)
        fake_llm.script(held)
        relearning = PersonRelearnJob(persons.db, persons.resolver, lambda: RelearnSettings(True, 5), llm)
        running = asyncio.create_task(relearning.run(T0 + timedelta(hours=1)))
        await held.reached.wait()
        assert main.person_id is not None and alt.person_id is not None
        await persons.admin.merge(main.person_id, alt.person_id)
        newcomer = await g1.say("u5", "我是新来的", card="新人")
        held.release.set()
        done = await running
    finally:
        await llm.close()
    assert newcomer.person_id == alt.person_id, "the id was given again"
    assert done.stored == 1
    assert await timeline(memory.db, main) == ["周末爬了北高峰"]
    assert await rows_about(memory.db, newcomer.person_id) == 0
