"""The relearn job asks about neighbouring chunks of a chat in one request of up to 60 messages, removes
chunks with nothing left to read without asking, and asks about a tried chunk once more after
RETRY_AFTER before removing it (memory.persons.relearn); real gateway and openai client against the
fake server, real database."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlalchemy import text

from memory.clock import ManualClock
from memory.persons import relearn
from memory.persons.consolidate import LLM_CHUNK
from memory.persons.relearn import RETRY_AFTER, group_gaps
from memory.service import MemoryService
from memory.storage import Database
from memory.types import MessageDeletion
from tasks.person_relearn import PersonRelearnJob, RelearnSettings
from tests.conftest import T0
from tests.fakes.openai_server import Answer, FakeOpenAI
from tests.memory.persons.people_fixtures import Chat
from tests.tasks.test_person_relearn import (
    gaps,
    hiker,
    job,
    model_facts,
    read_offline,
    reader,
    timeline,
)


def prompt_ids(fake: FakeOpenAI, since: int) -> list[list[int]]:
    """The message ids each chat request since the `since`-th asked about."""
    return [
        [int(i) for i in re.findall(r"^\[(\d+)\]", str(r.messages[-1]["content"]), re.MULTILINE)]
        for r in fake.chat_requests[since:]
    ]


async def test_chunks_noted_message_by_message_are_relearnt_in_requests_of_up_to_60_messages(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    async with hiker(memory, clock, fake_llm) as (llm, persons, g1, hike):
        fish = await Chat(memory, "g2").say("u3", "上周去千岛湖钓鱼了", card="老王", minutes=-10)
        await read_offline(persons, fake_llm)
        said = [hike]
        for n in range(69):  # consolidated after every message while the model is away
            said.append(await g1.say("u1", f"第{n}次：周末爬了北高峰，我最近迷上了徒步", card="阿红"))
            await persons.consolidator.run(T0 + timedelta(minutes=n))
        noted = await gaps(memory.db)
        assert len(noted) == 71 and all(len(g.message_ids) == 1 for g in noted)
        asked = len(fake_llm.chat_requests)
        fake_llm.default = reader
        two = RelearnSettings(enabled=True, per_run=2, interval=timedelta(minutes=5))
        relearning = PersonRelearnJob(persons.db, persons.resolver, lambda: two, llm)
        first = await relearning.run(T0 + timedelta(hours=2))
        left = [g.message_ids for g in await gaps(memory.db)]
        second = await relearning.run(T0 + timedelta(hours=3))
    ids = [s.message_id for s in said]
    # per_run counts requests: the newest 60 of g1, then its 10 older ones; g2's chunk waits a run.
    assert (first.stored, first.tried, second.stored) == (2, 0, 1)
    assert left == [[fish.message_id]]
    assert prompt_ids(fake_llm, asked) == [ids[10:], ids[:10], [fish.message_id]]
    assert max(len(p) for p in prompt_ids(fake_llm, asked)) == LLM_CHUNK
    assert await gaps(memory.db) == []
    assert await timeline(memory.db, said[0]) == ["周末爬了北高峰"] * 70, "an event from every message"
    assert await timeline(memory.db, fish) == ["上周去千岛湖钓鱼"]
    assert [(key, value) for key, value, _ in await model_facts(memory.db, said[0])] == [("likes", "徒步")]


def test_a_request_takes_a_chats_following_chunks_while_they_fit_and_never_skips_one() -> None:
    chunk = list(range(100, 100 + LLM_CHUNK - 1))
    noted = [
        (1, 7, [1, 2]),
        (2, 8, [50]),
        (3, 7, [2, 3]),  # overlapping its neighbour: one message counted once
        (4, 7, chunk),  # too many to join: starts the chat's next request
        (5, 7, [4]),
        (6, 8, [51]),
    ]
    assert group_gaps(noted, 5) == [(1, 3), (2, 6), (4, 5)]
    # Out of requests: the chunk that cannot join keeps the chat's older ones out of this run.
    assert group_gaps(noted, 2) == [(1, 3), (2, 6)]
    assert group_gaps(noted, 1) == [(1, 3)]
    assert group_gaps([], 3) == []


async def test_chunks_whose_messages_are_gone_are_removed_without_asking_the_model(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    async with hiker(memory, clock, fake_llm) as (llm, persons, _, hike):
        g2, g3 = Chat(memory, "g2"), Chat(memory, "g3")
        await g2.say("u3", "上周去千岛湖钓鱼了", card="老王")
        gone = await g3.say("u4", "周末去西溪骑车了", card="小李")
        await read_offline(persons, fake_llm)
        assert len(await gaps(memory.db)) == 3
        assert await memory.delete(MessageDeletion("test", "g2", "g2-m1"))
        assert gone.person_id is not None
        await persons.admin.forget(gone.person_id, remove_messages=False, now=T0 + timedelta(minutes=30))
        asked = len(fake_llm.chat_requests)
        fake_llm.default = reader
        done = await job(persons, llm).run(T0 + timedelta(hours=1))
    assert (done.stored, done.tried) == (1, 0)
    assert prompt_ids(fake_llm, asked) == [[hike.message_id]]
    assert await gaps(memory.db) == []


@pytest.mark.parametrize("retry_reads", [False, True])
async def test_a_tried_chunk_is_asked_about_once_more_after_the_retry_wait_then_removed(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI, retry_reads: bool
) -> None:
    async with hiker(memory, clock, fake_llm) as (llm, persons, _, hike):
        await read_offline(persons, fake_llm)
        relearning = job(persons, llm)
        fake_llm.default = lambda _body: Answer("这不是 JSON")
        tried_at = T0 + timedelta(hours=1)
        assert (await relearning.run(tried_at)).tried == 1
        async with memory.db.read() as session:
            assert await relearn.waiting(session) == (1, 1)
        asked = len(fake_llm.chat_requests)
        early = await relearning.run(tried_at + RETRY_AFTER - timedelta(minutes=1))
        assert (early.stored, early.tried) == (0, 0) and len(fake_llm.chat_requests) == asked
        if retry_reads:
            fake_llm.default = reader
        retried = await relearning.run(tried_at + RETRY_AFTER)
    # (after an unusable answer the gateway's second request asks the model to mend its JSON)
    assert (retried.stored, retried.tried) == ((1, 0) if retry_reads else (0, 1))
    assert prompt_ids(fake_llm, asked)[0] == [hike.message_id]
    assert await timeline(memory.db, hike) == (["周末爬了北高峰"] if retry_reads else [])
    assert await gaps(memory.db) == []
    async with memory.db.read() as session:
        assert await relearn.waiting(session) == (0, 0)


async def test_pruning_looks_each_chunks_messages_up_instead_of_reading_its_chat(db: Database) -> None:
    """Plans do not depend on table sizes here (no ANALYZE): SQLite would otherwise scan a chat's
    messages for every chunk (0.38 s for 2,000 chunks of a 2,000-message chat, against 0.002 s)."""
    async with db.read() as session:
        found = await session.execute(text("EXPLAIN QUERY PLAN " + str(relearn.PRUNE_SQL)))
        plan = [str(row[3]) for row in found.all()]
    assert "SEARCH m USING INTEGER PRIMARY KEY (rowid=?)" in plan
    assert not any("ix_messages_chat_id" in step or step.startswith("SCAN m") for step in plan), plan
