"""The person consolidation job: own-words facts with message links, history kept, incremental,
LLM path checked against the messages and falling back offline."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from memory.clock import ManualClock
from memory.models import JobState, PersonFact
from memory.persons.config import PersonsConfig
from memory.persons.consolidate import JOB, PersonFactsAnswer
from memory.persons.service import PersonMemory
from memory.ports import LLMUnavailable, Model
from memory.service import MemoryService
from memory.storage import Database
from memory.types import Segment, SegmentKind
from tasks import JobRunner
from tasks.person_consolidation import person_consolidation_job
from tests.conftest import T0, make_message
from tests.fakes.openai_server import FakeOpenAI, answer_json
from tests.memory.persons.people_fixtures import Chat
from tests.memory.test_deletion_races import model
from tests.query_plans import selects_run


def _attach(memory: MemoryService, db: Database, llm: FakeLLM | None = None, **config: Any) -> PersonMemory:
    settings = PersonsConfig(**{"use_llm": llm is not None, **config})
    persons = PersonMemory(db, lambda: settings, llm)
    persons.attach(memory)
    return persons


async def _facts(db: Database, person_id: int) -> list[PersonFact]:
    async with db.read() as session:
        rows = await session.scalars(select(PersonFact).where(PersonFact.person_id == person_id))
        return list(rows.all())


async def test_a_quote_never_becomes_a_fact_about_the_quoter(memory: MemoryService, db: Database) -> None:
    people = _attach(memory, db)
    g1 = Chat(memory)
    xiaoming = await g1.say("u6", "中午吃啥", card="小明-设计")
    lily = await g1.say(
        "u2",
        '还有，小明说"我最讨厌香菜"，锅底别给他加香菜哈。我自己喜欢香菜，香菜全放我这边',
        card="莉莉-产品",
    )
    forwarded = await g1.say("u2", "> 我住在北京\n哈哈这个转发好好笑", card="莉莉-产品")
    await people.consolidator.run(T0)
    facts = [(f.key, f.value, f.message_id) for f in await _facts(db, lily.person_id)]
    assert facts == [("likes", "香菜", lily.message_id)]
    assert not [f for f in await _facts(db, lily.person_id) if f.message_id == forwarded.message_id]
    assert await _facts(db, xiaoming.person_id) == [], "hearsay is not learnt about 小明 either"


async def test_a_self_statement_becomes_a_fact_linked_to_its_message(
    memory: MemoryService, db: Database
) -> None:
    people = _attach(memory, db)
    g1 = Chat(memory)
    said = await g1.say("u1", "我住在杭州西湖区，文三路那边，骑车到公司十五分钟", card="阿红｜前端")
    report = await people.consolidator.run(T0)
    assert report.facts_added == 1 and report.messages == 1
    (fact,) = await _facts(db, said.person_id)
    assert (fact.key, fact.value, fact.source) == ("location", "杭州西湖区", "self")
    assert fact.message_id == said.message_id and fact.chat_id == said.chat_id
    assert said.message.text[fact.span_start : fact.span_end] == "杭州西湖区" == fact.evidence


async def test_a_named_third_person_gets_the_fact_and_a_pronoun_gets_none(
    memory: MemoryService, db: Database
) -> None:
    people = _attach(memory, db)
    g1 = Chat(memory)
    red = await g1.say("u1", "hi", card="小红")
    bob = await g1.say("u2", "小红住在北京。她喜欢猫", card="Bob")
    await people.consolidator.run(T0)
    assert [(f.key, f.value, f.source) for f in await _facts(db, red.person_id)] == [
        ("location", "北京", "stated")
    ]
    assert await _facts(db, bob.person_id) == []


async def test_superseded_facts_are_kept_with_the_change_on_the_timeline(
    memory: MemoryService, db: Database
) -> None:
    people = _attach(memory, db)
    g1 = Chat(memory)
    old = await g1.say("u3", "我是运维工程师", card="浩子")
    await people.consolidator.run(T0)
    new = await g1.say("u3", "我现在是SRE工程师啦", card="浩子")
    again = await g1.say("u3", "我是SRE工程师", card="浩子")
    await people.consolidator.run(T0)
    rows = sorted(await _facts(db, old.person_id), key=lambda f: f.id)
    assert [(f.value, f.superseded_at is not None) for f in rows] == [
        ("运维工程师", True),
        ("SRE工程师", False),
    ]
    assert rows[0].superseded_by == new.message_id
    assert rows[1].seen_message_ids == [again.message_id]
    record = await people.record(old.chat_id, old.person_id)
    assert record is not None and record.view.attributes == {"job": "SRE工程师"}
    assert [(t.kind, t.text, t.message_ids) for t in record.timeline] == [
        ("change", "职业：运维工程师 → SRE工程师", [old.message_id, new.message_id])
    ]


async def test_taking_a_fact_back_retires_it_with_the_change_on_the_timeline(
    memory: MemoryService, db: Database
) -> None:
    people = _attach(memory, db)
    g1 = Chat(memory)
    lived = await g1.say("u3", "我住在杭州滨江，在网易上班", card="浩子")
    await people.consolidator.run(T0)
    moved = await g1.say("u3", "我现在不住杭州了", card="浩子")
    await g1.say("u3", "I left my keys at home lol", card="浩子")
    await people.consolidator.run(T0)
    rows = sorted(await _facts(db, lived.person_id), key=lambda f: f.id)
    assert [(f.key, f.value, f.superseded_by) for f in rows] == [
        ("location", "杭州滨江", moved.message_id),
        ("workplace", "网易", None),
    ]
    record = await people.record(lived.chat_id, lived.person_id)
    assert record is not None and record.view.attributes == {"workplace": "网易"}
    assert [(t.kind, t.text, t.message_ids) for t in record.timeline] == [
        ("change", "住在：杭州滨江 → 不再", [lived.message_id, moved.message_id])
    ]


async def test_consolidation_is_incremental_and_bounded(
    memory: MemoryService, db: Database, clock: ManualClock
) -> None:
    people = _attach(memory, db, consolidation_batch=2)
    g1 = Chat(memory)
    for text in ("我住在北京", "今天好热", "我喜欢猫", "我喜欢猫"):
        last = await g1.say("u1", text, card="阿红")
    first = await people.consolidator.run(T0)
    assert (first.messages, first.facts_added) == (2, 1)
    second = await people.consolidator.run(T0)
    assert (second.messages, second.facts_added) == (2, 1)
    assert (await people.consolidator.run(T0)).messages == 0
    async with db.read() as session:
        state = (await session.scalars(select(JobState).where(JobState.job == JOB))).one()
    assert state.cursor == last.message_id
    facts = await _facts(db, last.person_id)
    assert sorted(f.value for f in facts) == ["北京", "猫"]
    runner = JobRunner(clock)
    runner.register(person_consolidation_job(people.consolidator, lambda: timedelta(minutes=5)))
    await g1.say("u1", "我养了一只猫", card="阿红")
    await runner.run_due(clock.now())
    clock.advance(timedelta(minutes=6))
    assert await runner.run_due(clock.now()) == [JOB]
    assert "pets" in {f.key for f in await _facts(db, last.person_id)}


class FakeLLM:
    """A tiny in-test LLMPort: returns a fixed answer, or fails."""

    def __init__(self, answer: dict[str, Any] | None) -> None:
        self.answer = answer
        self.prompts: list[Sequence[dict[str, Any]]] = []

    def available(self, task: str) -> bool:
        return True

    def configured(self, task: str) -> bool:
        return True

    async def complete_json(
        self, task: str, messages: Sequence[dict[str, Any]], schema: type[Model]
    ) -> Model:
        self.prompts.append(messages)
        if self.answer is None:
            raise LLMUnavailable(task, "test: model down")
        assert schema is PersonFactsAnswer
        return schema.model_validate(self.answer)

    async def complete_text(self, task: str, messages: Sequence[dict[str, Any]]) -> str:
        raise LLMUnavailable(task, "not used")


async def test_llm_facts_are_checked_against_the_speakers_own_words(
    memory: MemoryService, db: Database
) -> None:
    g1 = Chat(memory)
    quoting = await g1.say("u2", '小明说"我最讨厌香菜"', card="莉莉")
    own = await g1.say("u1", "周末去爬了北高峰，腿都废了，我最近迷上了徒步", card="阿红")
    llm = FakeLLM(
        {
            "facts": [
                {"message_id": own.message_id, "key": "likes", "value": "徒步"},
                {"message_id": quoting.message_id, "key": "dislikes", "value": "香菜"},  # a quote
                {"message_id": own.message_id, "key": "location", "value": "上海"},  # not in the text
                {"message_id": 9999, "key": "job", "value": "医生"},  # not in the batch
            ],
            "events": [{"message_id": own.message_id, "text": "周末爬了北高峰"}],
        }
    )
    people = _attach(memory, db, llm)
    report = await people.consolidator.run(T0)
    assert report.llm_calls == 1 and report.events_added == 1
    assert "我最讨厌香菜" not in str(llm.prompts[0]), "quoted text is not even shown to the model"
    facts = [(f.key, f.value, f.message_id) for f in await _facts(db, own.person_id)]
    assert ("likes", "徒步", own.message_id) in facts
    assert not [f for f in facts if f[0] == "location"]
    assert await _facts(db, quoting.person_id) == []
    record = await people.record(own.chat_id, own.person_id)
    assert record is not None and [t.text for t in record.timeline] == ["周末爬了北高峰"]


async def test_llm_unavailable_falls_back_to_the_offline_path(memory: MemoryService, db: Database) -> None:
    people = _attach(memory, db, FakeLLM(None))
    said = await Chat(memory).say("u1", "我住在杭州", card="阿红")
    report = await people.consolidator.run(T0)
    assert (report.llm_calls, report.llm_fallbacks, report.facts_added) == (0, 1, 1)
    assert [f.value for f in await _facts(db, said.person_id)] == ["杭州"]


async def test_the_model_and_the_offline_path_reading_one_message_differently_is_no_change(
    memory: MemoryService, db: Database
) -> None:
    said = await Chat(memory).say("u1", "我现在住在杭州滨江", card="阿红")
    llm = FakeLLM({"facts": [{"message_id": said.message_id, "key": "location", "value": "杭州"}]})
    people = _attach(memory, db, llm)
    report = await people.consolidator.run(T0)
    assert report.facts_superseded == 0
    assert [(f.value, f.superseded_at) for f in await _facts(db, said.person_id)] == [("杭州滨江", None)]
    record = await people.record(said.chat_id, said.person_id)
    assert record is not None and record.timeline == []


async def test_a_message_whose_segments_held_a_lone_surrogate_does_not_stop_consolidation(
    memory: MemoryService, db: Database, fake_llm: FakeOpenAI, clock: ManualClock
) -> None:
    """A OneBot event can carry an escaped lone surrogate ("\\ud800", valid JSON). The message text
    lost it, its segments kept it; the person job sends the segments' words to the model, and the
    `openai` client cannot encode them: the run failed with UnicodeEncodeError at every turn and the
    chat was never consolidated again. Segments are cleaned as the text is."""
    async with model(fake_llm, memory, clock) as llm:
        people = PersonMemory(db, lambda: PersonsConfig(use_llm=True), llm)
        people.attach(memory)
        text = "\ud800我住在杭州"
        await memory.record(make_message(1, text=text, segments=(Segment(SegmentKind.TEXT, text),)))
        await memory.record(make_message(2, text="大家好"))
        fake_llm.default = lambda _body: answer_json({"facts": [], "events": []})
        runner = JobRunner(clock)
        runner.register(person_consolidation_job(people.consolidator, lambda: timedelta(minutes=5)))
        await runner.run_job(JOB)
    assert runner.failures[JOB] == 0 and len(fake_llm.chat_requests) == 1
    assert "\ufffd" not in fake_llm.chat_requests[0].messages[-1]["content"]
    async with db.read() as session:
        cursor = await session.scalar(select(JobState.cursor).where(JobState.job == JOB))
    assert cursor == 2


async def test_a_stored_forward_is_never_read_as_the_forwarders_own_words(
    memory: MemoryService, db: Database, fake_llm: FakeOpenAI, clock: ManualClock
) -> None:
    """A forward re-shares someone else's words: the live path learns nothing about the forwarder from it,
    and consolidation, reading it back from the database, neither shows it to the model as theirs nor
    learns it offline."""
    async with model(fake_llm, memory, clock) as llm:
        people = PersonMemory(db, lambda: PersonsConfig(use_llm=True), llm)
        people.attach(memory)
        g1 = Chat(memory)
        forward = await g1.say("u2", "我是素食者，我住在柏林。I live in Berlin", card="莉莉", forwarded=True)
        own = await g1.say("u2", "我住在杭州", card="莉莉")
        cited = {"message_id": forward.message_id, "key": "location", "value": "柏林"}
        fake_llm.default = lambda _body: answer_json({"facts": [cited], "events": []})
        runner = JobRunner(clock)
        runner.register(person_consolidation_job(people.consolidator, lambda: timedelta(minutes=5)))
        await runner.run_job(JOB)
    (request,) = fake_llm.chat_requests
    prompt = request.messages[-1]["content"]
    assert "杭州" in prompt and f"[{own.message_id}]" in prompt
    assert "柏林" not in prompt and "Berlin" not in prompt and f"[{forward.message_id}]" not in prompt
    facts = [(f.key, f.value, f.message_id) for f in await _facts(db, own.person_id)]
    assert facts == [("location", "杭州", own.message_id)], "nothing of the forward, by the model or offline"


async def test_a_number_for_a_value_and_null_for_a_list_are_read_not_repaired(
    memory: MemoryService, db: Database, fake_llm: FakeOpenAI, clock: ManualClock
) -> None:
    """A model writing an age as the number 30 and `null` for the events it did not find answered the
    right shape with the wrong types: the answer failed validation, a repair was asked for, and the age
    was lost when the repair did the same. Both are now read as meant, in one request."""
    async with model(fake_llm, memory, clock) as llm:
        people = PersonMemory(db, lambda: PersonsConfig(use_llm=True), llm)
        people.attach(memory)
        said = await Chat(memory).say("u2", "下个月我就满30了，时间过得真快", card="莉莉")
        cited = {"message_id": said.message_id, "key": "age", "value": 30}
        fake_llm.default = lambda _body: answer_json({"facts": [cited], "events": None})
        runner = JobRunner(clock)
        runner.register(person_consolidation_job(people.consolidator, lambda: timedelta(minutes=5)))
        await runner.run_job(JOB)
    assert len(fake_llm.chat_requests) == 1, "no repair request"
    facts = [(f.key, f.value, f.message_id) for f in await _facts(db, said.person_id)]
    assert facts == [("age", "30", said.message_id)]


async def test_a_run_reads_only_the_chats_with_new_messages(memory: MemoryService, db: Database) -> None:
    """A bot in many quiet chats: a run finds the chats with something new in one query, instead of
    reading every chat's cursor and messages (a few milliseconds each, at every run, for ever)."""
    people = _attach(memory, db)
    for n in range(12):
        await Chat(memory, f"quiet{n}").say("u1", "我住在杭州", card="阿红")
    busy = Chat(memory, "busy")
    await busy.say("u2", "我住在北京", card="Bob")
    await people.consolidator.run(T0)
    with selects_run(db) as seen:
        assert (await people.consolidator.run(T0)).messages == 0
    assert len(seen) <= 2, f"{len(seen)} queries to find that none of 13 chats has anything new"
    said = await busy.say("u3", "我住在上海", card="Carol")
    assert (await people.consolidator.run(T0)).messages == 1
    assert [f.value for f in await _facts(db, said.person_id)] == ["上海"]
