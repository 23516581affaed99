"""A `qunyi people merge` landing while consolidation or relearn waits on the person model: what the
model found is written to the survivor, nothing to the merged-away id, nothing lost
(memory.persons.survivors); the merge goes through the real admin path, the model is the fake server
holding its answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

from sqlalchemy import func, select

from bot.llm.gateway import LLMGateway
from memory.clock import ManualClock
from memory.ingest import Recorded
from memory.models import Person, PersonFact, PersonTimelineEntry
from memory.persons.service import PersonMemory
from memory.service import MemoryService
from memory.storage import Database
from tests.conftest import T0
from tests.fakes.gateway import fake_gateway
from tests.fakes.openai_server import FakeOpenAI, Hold
from tests.memory.persons.people_fixtures import Chat
from tests.tasks.test_person_relearn import gaps, job, model_facts, people, read_offline, reader, timeline

SAID = "周末去爬了北高峰，我最近迷上了徒步"
Done = TypeVar("Done")


@dataclass(frozen=True, slots=True)
class Accounts:
    """Chat g1 where u9 (阿红) greeted and u1, their second account, said SAID."""

    llm: LLMGateway
    persons: PersonMemory
    chat: Chat
    main: Recorded
    alt: Recorded

    @property
    def ids(self) -> tuple[int, int]:
        assert self.main.person_id is not None and self.alt.person_id is not None
        return self.main.person_id, self.alt.person_id

    async def merged_while_asking(
        self,
        fake: FakeOpenAI,
        run: Callable[[], Awaitable[Done]],
        then: Callable[[], Awaitable[object]] | None = None,
    ) -> Done:
        """What `run` returns when u1 is merged into u9 (and `then` is done) while the model holds its
        reading of SAID."""
        held = Hold(reader({"messages": [{"content": f"[{self.alt.message_id}] {SAID}"}]}))
        fake.script(held)
        running = asyncio.create_task(run())
        await held.reached.wait()
        await self.persons.admin.merge(*self.ids)
        if then is not None:
            await then()
        held.release.set()
        return await running


@asynccontextmanager
async def accounts(memory: MemoryService, clock: ManualClock, fake: FakeOpenAI) -> AsyncIterator[Accounts]:
    llm = fake_gateway(fake, memory.db, clock, "person")
    try:
        g1 = Chat(memory)
        persons = people(memory, llm)
        main = await g1.say("u9", "大家好", card="阿红")
        yield Accounts(llm, persons, g1, main, await g1.say("u1", SAID, card="阿红小号"))
    finally:
        await llm.close()


async def rows_about(db: Database, person_id: int) -> int:
    """Facts and timeline entries of `person_id`."""
    async with db.read() as session:
        counted = 0
        for table in (PersonFact, PersonTimelineEntry):
            query = select(func.count()).select_from(table).where(table.person_id == person_id)
            counted += int((await session.execute(query)).scalar_one())
        return counted


async def learnt_by_the_survivor_only(db: Database, people: Accounts) -> None:
    assert await timeline(db, people.main) == ["周末爬了北高峰"]
    assert await model_facts(db, people.main) == [("likes", "徒步", people.alt.message_id)]
    assert await rows_about(db, people.ids[1]) == 0


async def test_consolidation_writes_to_the_survivor_of_a_merge_made_while_the_model_thinks(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    async with accounts(memory, clock, fake_llm) as two:
        report = await two.merged_while_asking(fake_llm, lambda: two.persons.consolidator.run(T0))
    assert (report.messages, report.llm_calls, report.events_added) == (2, 1, 1)
    await learnt_by_the_survivor_only(memory.db, two)
    async with memory.db.read() as session:
        assert await session.get(Person, two.ids[1]) is None


async def test_relearn_writes_to_the_survivor_of_a_merge_made_while_the_model_thinks(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    async with accounts(memory, clock, fake_llm) as two:
        await read_offline(two.persons, fake_llm)
        relearning = job(two.persons, two.llm)
        done = await two.merged_while_asking(fake_llm, lambda: relearning.run(T0 + timedelta(hours=1)))
    assert (done.stored, done.tried) == (1, 0)
    await learnt_by_the_survivor_only(memory.db, two)
    assert await gaps(memory.db) == []


async def test_a_newcomer_given_the_merged_away_id_meanwhile_gets_nothing(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """A newcomer arriving while the merged person's facts wait on the model: people are told apart by
    their account (before 0022, SQLite also gave them the merged-away id)."""
    async with accounts(memory, clock, fake_llm) as two:
        await read_offline(two.persons, fake_llm)
        relearning = job(two.persons, two.llm)
        arrived: list[Recorded] = []

        async def arrive() -> None:
            arrived.append(await two.chat.say("u5", "我是新来的", card="新人"))

        later = T0 + timedelta(hours=1)
        done = await two.merged_while_asking(fake_llm, lambda: relearning.run(later), arrive)
    newcomer = arrived[0]
    assert newcomer.person_id > two.ids[1], "the merged-away id is never given again"
    assert done.stored == 1
    assert await timeline(memory.db, two.main) == ["周末爬了北高峰"]
    assert await rows_about(memory.db, newcomer.person_id) == 0
