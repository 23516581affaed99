"""The jargon mining job on a real database in simulated time: cadence, cursor, restart, filters,
LLM extraction with fallback, inference after mining."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.llm import build_gateway
from bot.llm.settings import LLMSettings
from memory.chat_merge import merge_chats
from memory.clock import ManualClock
from memory.jargon import dictionary
from memory.jargon.discovery import DiscoveryParams
from memory.jargon.filters import FilterParams
from memory.jargon.inference import Inference, infer
from memory.jargon.types import Candidate
from memory.models import JobState
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.recall import ScopePolicy
from memory.service import MemoryService
from memory.storage import Database
from memory.storage.fts import INDEX_JOB
from memory.text import truncate
from memory.types import ChatKind, MessageDeletion
from tasks.jargon_mining import (
    JOB_NAME,
    STATISTICS_IDLE_SECONDS,
    JargonMiningJob,
    MiningSettings,
    RunReport,
    name_variants,
)
from tasks.runner import JobRunner
from tests.conftest import T0, chat_ids, database_locked, make_message
from tests.fakes.openai_server import Fail, FakeOpenAI, Hold, answer_json
from tests.memory.test_deletion_races import meanwhile, model
from tests.query_plans import planned

SETTINGS = MiningSettings(discovery=DiscoveryParams(min_lift=0.0, min_df=2))
LINES = [
    "绝绝子 这个好看",
    "今天也绝绝子",
    "真的绝绝子啊",
    "吃饭了吗",
    "下午开会",
    "绝绝子 冲",
    "晚上吃啥",
    "好的",
    "绝绝子!",
    "收到",
]


async def _record(
    memory: MemoryService, start: int, texts: list[str], chat: str = "g1", **extra: object
) -> None:
    await memory.record_many(
        make_message(start + i, chat=chat, sender=f"u{i % 4}", text=t, **extra) for i, t in enumerate(texts)
    )


async def _entries(memory: MemoryService) -> dict[str, int]:
    async with memory.db.read() as session:
        return {e.content: e.count for e in await dictionary.list_entries(session)}


async def test_cadence_cursor_and_counts(memory: MemoryService) -> None:
    job = JargonMiningJob(memory.db, lambda: SETTINGS)
    await _record(memory, 0, LINES[:9])
    assert (await job.run(T0)).chats == 0  # 9 < min_new_messages
    await _record(memory, 9, LINES[9:])
    assert (await job.run(T0)).chats == 1
    assert (await _entries(memory)).get("绝绝子") == 5
    await _record(memory, 10, LINES)
    assert (await job.run(T0 + timedelta(seconds=5))).chats == 0  # cooldown of 20 s
    assert (await job.run(T0 + timedelta(seconds=25))).chats == 1
    assert (await _entries(memory))["绝绝子"] == 10
    async with memory.db.read() as session:
        state = (await session.scalars(select(JobState).where(JobState.job == JOB_NAME))).one()
    assert state.last_run == (T0 + timedelta(seconds=25)).timestamp()
    # Nothing new: the same messages are never counted twice.
    assert (await job.run(T0 + timedelta(minutes=5))).chats == 0


async def test_restart_rebuilds_history_from_the_database(memory: MemoryService) -> None:
    await _record(memory, 0, LINES)
    await JargonMiningJob(memory.db, lambda: SETTINGS).run(T0)
    quiet = [
        "绝绝子 又来",
        "普通的话",
        "再来一句",
        "绝绝子",
        "嗯嗯",
        "第六句",
        "第七句",
        "第八句",
        "第九句",
        "绝绝子!!",
    ]
    await _record(memory, 10, quiet)
    restarted = JargonMiningJob(memory.db, lambda: SETTINGS)  # empty in-memory cache
    assert (await restarted.run(T0 + timedelta(minutes=1))).chats == 1
    assert (await _entries(memory))["绝绝子"] == 8


async def test_the_statistics_of_a_chat_not_mined_for_an_hour_leave_memory(memory: MemoryService) -> None:
    """A bot in many chats holds the statistics of those mined lately only: a quiet chat's are dropped
    after an hour and rebuilt from its stored messages when it has enough new ones, counting as before."""
    job = JargonMiningJob(memory.db, lambda: SETTINGS)
    await _record(memory, 0, LINES, chat="quiet")
    await _record(memory, 100, LINES, chat="busy")
    await job.run(T0)
    assert len(job.cached_chats()) == 2
    later = T0 + timedelta(seconds=STATISTICS_IDLE_SECONDS)
    await _record(memory, 200, LINES, chat="busy")
    assert (await job.run(later)).chats == 1
    assert job.cached_chats() == set(await chat_ids(memory, "busy"))
    await _record(memory, 300, LINES, chat="quiet")
    assert (await job.run(later + timedelta(minutes=1))).chats == 1
    assert (await _entries(memory))["绝绝子"] == 5 * 4  # each window of both chats, once


async def test_a_chat_merged_in_meanwhile_is_part_of_the_statistics(memory: MemoryService) -> None:
    """The job keeps each chat's statistics between runs; a merge into a chat (the bot following a
    supergroup upgrade, or `qunyi chats merge` from another process) that left its cursor as it was
    left them without the merged chat's history until a restart, so a term used there was judged on
    half the group's talk."""
    job = JargonMiningJob(memory.db, lambda: SETTINGS)
    await _record(memory, 0, LINES, chat="old")
    await _record(memory, 10, [f"新群第{n}句" for n in range(10)], chat="new")
    assert (await job.run(T0)).chats == 2
    old, new = [(await memory.find_chat(f"test:{k}")).id for k in ("old", "new")]  # type: ignore[union-attr]
    await merge_chats(memory.db, old, new, now=T0.timestamp())
    await _record(memory, 20, ["绝绝子", *(f"又一句{n}" for n in range(9))], chat="new")
    assert (await job.run(T0 + timedelta(minutes=1))).chats == 1
    assert (await _entries(memory))["绝绝子"] == 6, "judged on the old group's use of it too"


async def test_a_chat_never_mined_counts_the_messages_it_had_before_the_others_were_mined(
    memory: MemoryService,
) -> None:
    """A tick reads the messages past the lowest cursor; a chat never mined (too few messages) and an
    empty one (a deletion in a chat never recorded) have none: the small chat's messages below the
    big chat's cursor still count towards its `min_new_messages`."""
    job = JargonMiningJob(memory.db, lambda: SETTINGS)
    await _record(memory, 0, LINES[:9], chat="small")
    await _record(memory, 9, LINES, chat="big")
    await memory.delete(MessageDeletion("test", "empty", "m1"))
    assert (await job.run(T0)).chats == 1
    await _record(memory, 19, ["又一句"], chat="small")
    assert (await job.run(T0 + timedelta(minutes=1))).chats == 1


async def test_a_quiet_chat_does_not_make_every_tick_read_what_the_busy_chats_said_since(
    memory: MemoryService,
) -> None:
    """A chat with fewer new messages than `min_new_messages` kept its cursor low, and each tick read
    every message of every chat above it (a range on the messages' id): a day of a busy group each
    few seconds. Each chat's new messages are now counted through its own index, up to the minimum."""
    job = JargonMiningJob(memory.db, lambda: SETTINGS)
    await _record(memory, 0, LINES, chat="quiet")
    await _record(memory, 10, LINES, chat="busy")
    assert (await job.run(T0)).chats == 2
    await _record(memory, 20, LINES[:3], chat="quiet")
    await _record(memory, 23, [f"忙群第{n}句" for n in range(30)], chat="busy")
    with planned(memory.db) as plans:
        assert (await job.run(T0 + timedelta(minutes=1))).chats == 1
    ranges = [(s, step.detail) for s, steps in plans for step in steps if "rowid>" in step.detail]
    assert ranges == []
    assert not any(step.detail.startswith("SCAN m") for _, steps in plans for step in steps)


async def test_a_merge_from_another_process_is_mined_without_waiting_for_a_new_message(
    memory: MemoryService,
) -> None:
    """Each chat had fewer new messages than `min_new_messages`, together enough; after `qunyi chats
    merge` (another process) the job's ticks took "no new message" for "nothing to do" until the group
    spoke again."""
    job = JargonMiningJob(memory.db, lambda: SETTINGS)
    await _record(memory, 0, LINES, chat="old")
    await _record(memory, 10, [f"新群第{n}句" for n in range(10)], chat="new")
    assert (await job.run(T0)).chats == 2
    await _record(memory, 20, LINES[:5], chat="old")
    await _record(memory, 25, [f"新群又一句{n}" for n in range(5)], chat="new")
    assert (await job.run(T0 + timedelta(minutes=1))).chats == 0
    old, new = [(await memory.find_chat(f"test:{k}")).id for k in ("old", "new")]  # type: ignore[union-attr]
    await merge_chats(memory.db, old, new, now=T0.timestamp())
    assert (await job.run(T0 + timedelta(minutes=2))).chats == 1


async def test_a_chat_merged_away_while_the_model_reads_it_gets_nothing_written(
    memory: MemoryService, clock: ManualClock, fake_llm: FakeOpenAI
) -> None:
    """`qunyi chats merge` from another process while the bot's run waits on the model: the run then
    wrote its counts and cursor for a chat that no longer existed (a foreign-key failure, or counts
    of messages that the other chat's run mines again)."""
    await _record(memory, 0, LINES, chat="old")
    await memory.record(make_message(99, chat="new", text="新群"))
    old, new = [(await memory.find_chat(f"test:{k}")).id for k in ("old", "new")]  # type: ignore[union-attr]
    found = [{"content": "绝绝子", "message_id": str(i)} for i in (1, 2, 6)]
    held = Hold(answer_json(found))
    fake_llm.script(held)
    async with model(fake_llm, memory, clock) as llm:
        settings = dataclasses.replace(SETTINGS, extractor="llm")
        job = JargonMiningJob(memory.db, lambda: settings, llm)
        report = await meanwhile(held, job.run(T0), lambda: merge_chats(memory.db, old, new, now=0.0))
    assert report.messages == 10
    async with memory.db.read() as session:
        states = (await session.scalars(select(JobState.chat_id).where(JobState.job != INDEX_JOB))).all()
    assert (await _entries(memory), states) == ({}, [])


async def test_names_bot_lines_and_rejected_terms_are_not_mined(memory: MemoryService) -> None:
    await memory.record(make_message(0, sender="z", text="hi", sender_name="阿giao哥"))
    await _record(memory, 1, ["阿giao哥 来了", "阿giao哥 在吗", "阿giao哥 冲", *LINES[:7]])
    await memory.record_many(
        make_message(20 + i, sender="bot", text="机器人口头禅 机器人口头禅", is_bot=True) for i in range(5)
    )
    async with memory.db.write() as session:
        await dictionary.add_manual(session, "绝绝子", "", None, "admin", 0.0, status="rejected")
    await JargonMiningJob(memory.db, lambda: SETTINGS).run(T0)
    mined = await _entries(memory)
    assert not any("giao" in term or "机器人" in term for term in mined)
    assert mined == {"绝绝子": 0}  # rejected: never proposed again


async def test_a_term_rejected_in_a_chats_own_dictionary_is_not_mined_from_it_into_the_global_one(
    memory: MemoryService,
) -> None:
    """Under `scope = "global"` a term an admin rejected in chat A's own dictionary (under the chat
    scope, or added for A) was still mined from A's messages into the global dictionary, and so came
    back, inferred from A's examples, in every chat. A's rejection now keeps A's messages from proposing
    it anywhere; another chat using the term still mines it into the global dictionary (A's own
    rejected entry hides that one in A)."""
    await _record(memory, 0, LINES, chat="A")
    [a] = await chat_ids(memory, "A")
    async with memory.db.write() as session:
        await dictionary.add_manual(session, "绝绝子", "", a, "admin", 0.0, status="rejected")
    await JargonMiningJob(memory.db, lambda: SETTINGS).run(T0)
    async with memory.db.read() as session:
        rows = [
            (e.chat_id, e.status) for e in await dictionary.list_entries(session) if e.content == "绝绝子"
        ]
    assert rows == [(a, "rejected")], "nothing was mined into the global dictionary from A"
    await _record(memory, 0, LINES, chat="B")
    await JargonMiningJob(memory.db, lambda: SETTINGS).run(T0 + timedelta(seconds=25))
    [b] = await chat_ids(memory, "B")
    async with memory.db.read() as session:
        rows = {e.chat_id: e for e in await dictionary.list_entries(session) if e.content == "绝绝子"}
        assert rows.keys() == {None, a} and rows[None].count == 5
        assert await dictionary.chat_counts(session, rows[None].id) == {b: 5}, "none of A's messages"
        in_a = await dictionary.lookup(session, "绝绝子", a)
    assert in_a is not None and in_a.status == "rejected", "A's rejection still hides the global entry"


async def test_chat_scope_keeps_dictionaries_apart(memory: MemoryService) -> None:
    settings = dataclasses.replace(SETTINGS, scope="chat")
    await _record(memory, 0, LINES, chat="A")
    await _record(memory, 0, LINES, chat="B")
    await JargonMiningJob(memory.db, lambda: settings).run(T0)
    async with memory.db.read() as session:
        rows = [e for e in await dictionary.list_entries(session) if e.content == "绝绝子"]
    assert len(rows) == 2 and len({e.chat_id for e in rows}) == 2 and None not in {e.chat_id for e in rows}


@pytest.mark.parametrize("global_private", [False, True])
async def test_chats_keeping_their_memory_keep_their_slang_under_the_global_scope(
    memory: MemoryService, global_private: bool
) -> None:
    """A blacklisted group's slang, and a private chat's unless `global_private`, goes to its own
    dictionary: the global one every chat sees holds none of it, nor any of its messages as evidence."""
    privacy = ScopePolicy(global_blacklist=("test:staff",), global_private=global_private)
    settings = dataclasses.replace(SETTINGS, privacy=privacy)
    await _record(memory, 0, LINES, chat="g1")
    await _record(memory, 0, LINES, chat="staff")
    await _record(memory, 0, LINES, chat="dm", chat_kind=ChatKind.PRIVATE)
    await JargonMiningJob(memory.db, lambda: settings).run(T0)
    g1, staff, dm = await chat_ids(memory, "g1", "staff", "dm")
    async with memory.db.read() as session:
        owners = {e.chat_id for e in await dictionary.list_entries(session) if e.content == "绝绝子"}
        shared = await dictionary.lookup(session, "绝绝子", g1)
        assert shared is not None and shared.chat_id is None
        seen_in = {e.message.chat_id for e in await dictionary.evidence(session, shared.id, None, 50)}
    assert owners == ({None, staff} if global_private else {None, staff, dm})
    assert seen_in == ({g1, dm} if global_private else {g1})


async def test_a_global_meaning_is_not_inferred_from_a_chat_keeping_its_memory(
    memory: MemoryService, fake_llm: FakeOpenAI, clock: ManualClock
) -> None:
    """Evidence a blacklisted chat gave a global entry before it was blacklisted (or that an older
    Qunyi mined into the global dictionary) is not shown to the model inferring the shared meaning."""
    llm = build_gateway(
        LLMSettings(enabled=True, base_url=fake_llm.base_url, model="m", api_key="k", max_retries=0),
        memory.db,
        clock,
    )
    try:
        await _record(memory, 0, ["绝绝子 蓝鲸计划下周上线", "蓝鲸计划 绝绝子"], chat="staff")
        await _record(memory, 0, ["绝绝子 这个好看", "今天也绝绝子"], chat="g1")
        g1, staff = await chat_ids(memory, "g1", "staff")
        async with memory.db.write() as session:
            for chat in (staff, g1):
                said = await memory.recent(chat, 2)
                await dictionary.upsert_mined(
                    session, chat, "global", [Candidate("绝绝子", tuple(str(m.id) for m in said), 1.0)], 0.0
                )
        fake_llm.script(
            answer_json({"no_information": False, "meaning": "非常好"}),
            answer_json({"meaning": "一个词"}),
            answer_json({"same": False}),
        )
        privacy = ScopePolicy(global_blacklist=("test:staff",))
        settings = dataclasses.replace(SETTINGS, privacy=privacy)
        assert (await JargonMiningJob(memory.db, lambda: settings, llm).run(T0)).inferred == 1
        asked = json.dumps(fake_llm.chat_requests[0].messages, ensure_ascii=False)
        assert "这个好看" in asked and "蓝鲸" not in asked
    finally:
        await llm.close()


async def test_llm_extraction_then_inference(
    memory: MemoryService, fake_llm: FakeOpenAI, clock: ManualClock
) -> None:
    llm = build_gateway(
        LLMSettings(enabled=True, base_url=fake_llm.base_url, model="m", api_key="k", max_retries=0),
        memory.db,
        clock,
    )
    try:
        await _record(memory, 0, LINES)
        chat = await memory.chat("test", "g1")
        assert chat is not None
        window = await memory.recent(chat.id, 10)
        by_text = {m.text: m.id for m in window}
        fake_llm.script(
            answer_json(
                [
                    {"content": "绝绝子", "message_id": str(by_text["今天也绝绝子"])},
                    {"content": "绝绝子", "message_id": str(by_text["真的绝绝子啊"])},
                    {"content": "绝绝子", "message_id": "999999"},  # not in the window
                    {"content": "吃饭", "message_id": str(by_text["今天也绝绝子"])},  # not in that message
                ]
            ),
            answer_json({"no_information": False, "meaning": "非常好"}),
            answer_json({"meaning": "一个词"}),
            answer_json({"same": False}),
        )
        settings = dataclasses.replace(SETTINGS, extractor="llm")
        report = await JargonMiningJob(memory.db, lambda: settings, llm).run(T0)
        assert (report.llm_extractions, report.candidates, report.inferred) == (1, 1, 1)
        async with memory.db.read() as session:
            entry = await dictionary.lookup(session, "绝绝子", chat.id)
        assert entry is not None and (entry.count, entry.meaning, entry.is_jargon) == (2, "非常好", True)
    finally:
        await llm.close()


async def test_llm_failure_falls_back_to_offline(memory: MemoryService, clock: ManualClock) -> None:
    llm = build_gateway(LLMSettings(enabled=False), memory.db, clock)
    try:
        await _record(memory, 0, LINES)
        settings = dataclasses.replace(SETTINGS, extractor="llm")
        report = await JargonMiningJob(memory.db, lambda: settings, llm).run(T0)
        assert report.llm_extractions == 0 and (await _entries(memory)).get("绝绝子") == 5
        async with memory.db.read() as session:
            entry = await dictionary.lookup(session, "绝绝子", (await memory.chat("test", "g1")).id)  # type: ignore[union-attr]
        assert entry is not None and entry.status == "candidate"  # waits for review without a model
    finally:
        await llm.close()


def test_name_variants_split_group_cards() -> None:
    assert name_variants(["浩子｜SRE", "Tom（汤姆）", "小明-设计", "", "A|b"]) == [
        "浩子｜SRE",
        "浩子",
        "SRE",
        "Tom（汤姆）",
        "Tom",
        "汤姆",
        "小明-设计",
        "小明",
        "设计",
        "A|b",
    ]


async def test_self_declared_aliases_are_not_mined(memory: MemoryService) -> None:
    """A name someone declared ("叫我老赵") is a person's alias, not group slang."""
    PersonMemory(memory.db, PersonsConfig).attach(memory)
    await memory.record(make_message(0, sender="u5", text="以后叫我老赵就行"))
    texts = [
        "老赵 来了没",
        "问问老赵",
        "老赵 yyds",
        "老赵说好",
        "等老赵",
        "老赵 冲",
        "找老赵",
        "和老赵",
        "老赵!",
        "老赵呢",
    ]
    await _record(memory, 1, texts)
    job = JargonMiningJob(memory.db, lambda: SETTINGS)
    await job.run(T0 + timedelta(hours=1))
    assert "老赵" not in await _entries(memory)


async def test_a_run_that_failed_on_a_locked_database_is_retried_without_new_messages(
    memory: MemoryService, tmp_path: Path, clock: ManualClock
) -> None:
    """Another process holding the write lock fails one run; the next tick mines the chat anyway."""
    impatient = await Database.open(tmp_path / "data", busy_timeout_ms=50)
    job = JargonMiningJob(impatient, lambda: SETTINGS)
    runner = JobRunner(clock)
    runner.register(job.spec())
    await _record(memory, 0, LINES)
    try:
        with database_locked(memory.db.path):
            await runner.run_job(JOB_NAME)
        assert runner.failures[JOB_NAME] == 1 and await _entries(memory) == {}
        clock.advance(timedelta(seconds=5))
        await runner.run_job(JOB_NAME)
    finally:
        await impatient.close()
    assert runner.failures[JOB_NAME] == 1
    assert (await _entries(memory)).get("绝绝子") == 5


async def test_a_clock_set_back_does_not_pause_mining(memory: MemoryService) -> None:
    """After the system clock is set back an hour, the chat's last run lies in the future; the
    cooldown counts from now, not from that future time."""
    job = JargonMiningJob(memory.db, lambda: SETTINGS)
    await _record(memory, 0, LINES)
    assert (await job.run(T0 + timedelta(hours=1))).chats == 1
    await _record(memory, 10, LINES)
    assert (await job.run(T0)).chats == 1
    assert (await _entries(memory))["绝绝子"] == 10


async def test_a_backlog_longer_than_one_window_is_mined_without_new_messages(memory: MemoryService) -> None:
    """An import (or a long pause) leaves more than `max_window_messages` to mine: each cooldown
    mines the next window, though no message arrives meanwhile."""
    await _record(memory, 0, LINES * 3)
    job = JargonMiningJob(memory.db, lambda: dataclasses.replace(SETTINGS, max_window_messages=10))
    assert [(await job.run(T0 + timedelta(seconds=25 * k))).chats for k in range(4)] == [1, 1, 1, 0]
    assert (await _entries(memory))["绝绝子"] == 15


async def test_a_window_mined_by_another_run_meanwhile_is_not_counted_twice(
    memory: MemoryService, tmp_path: Path
) -> None:
    """Two processes on one database (`qunyi import` catching up while the bot runs) both read the
    chat's cursor before either commits: the later commit gives way."""
    await _record(memory, 0, LINES * 6)  # 30 uses of 绝绝子: more than the 20 evidence rows kept
    other = await Database.open(tmp_path / "data")
    try:
        first, second = JargonMiningJob(memory.db, lambda: SETTINGS), JargonMiningJob(other, lambda: SETTINGS)
        chat = (await memory.find_chat("test:g1")).id  # type: ignore[union-attr]
        stamp = T0.timestamp()
        report = RunReport()
        assert await first.mine_chat(chat, 0, stamp, SETTINGS, report) > 0
        assert await second.mine_chat(chat, 0, stamp, SETTINGS, report) == 0
    finally:
        await other.close()
    assert report.chats == 1
    assert (await _entries(memory))["绝绝子"] == 30


async def test_no_inference_when_inferences_per_run_is_zero(
    memory: MemoryService, fake_llm: FakeOpenAI, clock: ManualClock
) -> None:
    """config.toml allows `inferences_per_run = 0` (0–1000): no meaning is asked for at all. Zero
    was taken as 'stop after the first', so every tick still sent one term to the model."""
    llm = build_gateway(
        LLMSettings(enabled=True, base_url=fake_llm.base_url, model="m", api_key="k", max_retries=0),
        memory.db,
        clock,
    )
    every_step = {"no_information": False, "meaning": "非常好", "same": False}
    fake_llm.default = lambda _body: answer_json(every_step)
    try:
        await _record(memory, 0, LINES)
        settings = dataclasses.replace(SETTINGS, inferences_per_run=0)
        report = await JargonMiningJob(memory.db, lambda: settings, llm).run(T0)
    finally:
        await llm.close()
    assert (report.candidates, report.inferred) == (1, 0)
    assert fake_llm.requests == []
    assert (await _entries(memory))["绝绝子"] == 5


async def test_an_endpoint_that_is_down_is_not_asked_again_at_every_tick(
    memory: MemoryService, fake_llm: FakeOpenAI, clock: ManualClock
) -> None:
    """The job ticks every cooldown/4 seconds (5 s by default). A due term whose inference failed
    (endpoint down: 5xx, timeouts) stayed due, and every tick asked the model again: retries and
    all, an outage of an hour sent thousands of requests. After a failed inference the job waits,
    from a cooldown doubling at each failure; the term is inferred once the endpoint answers."""
    llm = build_gateway(
        LLMSettings(enabled=True, base_url=fake_llm.base_url, model="m", api_key="k", max_retries=0),
        memory.db,
        clock,
    )
    fake_llm.default = lambda _body: Fail(500)
    job = JargonMiningJob(memory.db, lambda: SETTINGS, llm)
    cooldown = SETTINGS.cooldown_seconds
    try:
        await _record(memory, 0, LINES)
        await job.run(T0)
        assert len(fake_llm.chat_requests) == 1
        for seconds in (5, 10, 15):  # ticks within the first wait ask nothing
            await job.run(T0 + timedelta(seconds=seconds))
        assert len(fake_llm.chat_requests) == 1
        await job.run(T0 + timedelta(seconds=cooldown))
        assert len(fake_llm.chat_requests) == 2
        await job.run(T0 + timedelta(seconds=cooldown * 2.5))  # the wait doubled
        assert len(fake_llm.chat_requests) == 2
        every_step = {"no_information": False, "meaning": "非常好", "same": False}
        fake_llm.default = lambda _body: answer_json(every_step)
        report = await job.run(T0 + timedelta(seconds=cooldown * 3))
    finally:
        await llm.close()
    assert report.inferred == 1 and len(fake_llm.chat_requests) == 5
    async with memory.db.read() as session:
        entry = await dictionary.lookup(session, "绝绝子", (await memory.chat("test", "g1")).id)  # type: ignore[union-attr]
    assert entry is not None and entry.meaning == "非常好"


async def test_a_backlog_window_with_more_terms_than_the_batch_limit_still_counts_its_best(
    memory: MemoryService,
) -> None:
    """After an import the job mines the backlog in windows of `max_window_messages` (500) spanning
    days, where offline discovery finds more terms than `max_batch` (30): every such window was
    dropped whole as a misfire, so an imported history left almost nothing in the dictionary. The
    offline discoverer proposes its `max_candidates` best, and the batch limit is checked on those."""
    terms = ["zqxa", "wbvm", "plok", "yurt", "fjdk", "qmzn", "xvbe", "hgtr"]
    texts = [text for term in terms for text in (f"{term} 冲", f"真的{term}啊", f"{term}!")]
    await _record(memory, 0, texts)
    settings = dataclasses.replace(
        SETTINGS,
        discovery=dataclasses.replace(
            SETTINGS.discovery, max_candidates=3, filters=FilterParams(max_batch=5)
        ),
    )
    report = await JargonMiningJob(memory.db, lambda: settings).run(T0)
    assert report.candidates == 3
    assert len(await _entries(memory)) == 3


async def test_a_huge_meaning_is_cut_before_it_is_compared_and_stored(
    memory: MemoryService, fake_llm: FakeOpenAI, clock: ManualClock
) -> None:
    """A model answering 100,000 characters for a meaning (and for the usual one): step 3's question
    carried both whole, a request of that many tokens for one yes or no. Each is cut to what a meaning
    may hold (`MAX_MEANING_CHARS`), whole graphemes kept, as the stored meaning always was."""
    huge, usual = "非常好👍🏽" * 20_000, "一个词" * 40_000
    fake_llm.script(
        answer_json({"no_information": False, "meaning": huge}),
        answer_json({"meaning": usual}),
        answer_json({"same": False}),
    )
    llm = build_gateway(
        LLMSettings(enabled=True, base_url=fake_llm.base_url, model="m", api_key="k", max_retries=0),
        memory.db,
        clock,
    )
    try:
        result = await infer(llm, "绝绝子", [])
    finally:
        await llm.close()
    cut = truncate(huge, dictionary.MAX_MEANING_CHARS)
    assert result == Inference(cut, True)
    question = fake_llm.chat_requests[2].messages[-1]["content"]
    assert cut in question and truncate(usual, dictionary.MAX_MEANING_CHARS) in question
    assert len(question) < 3 * dictionary.MAX_MEANING_CHARS
