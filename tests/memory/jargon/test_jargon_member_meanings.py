"""Meanings members give in chat ("开炉就是去吃火锅"): found without a model, stored in the chat's own
dictionary, giving way to admins and to the model."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from pathlib import Path

import pytest

from memory.clock import ManualClock
from memory.jargon import dictionary
from memory.jargon.discovery import DiscoveryParams
from memory.jargon.earlier import explained_earlier
from memory.jargon.explain import JargonExplainer
from memory.jargon.explanations import MAX_CHARS, asked_about, explained_in, member_meanings
from memory.jargon.types import MinerMessage
from memory.service import MemoryService
from memory.storage import Database
from memory.types import MessageDeletion
from tasks.jargon_mining import JargonMiningJob, MiningSettings
from tests.child_reader import read_in_child
from tests.conftest import T0, chat_ids, make_message
from tests.fakes.openai_server import FakeOpenAI, answer_json
from tests.memory.test_deletion_races import model

# Long messages of many explanations, or of laughter before one: each clause start is tried.
MANY_CLAUSES_READER = """
import json
from memory.jargon.explanations import asked_about, explained_in
texts = ["a就是b，" * 60_000, "哈哈，" * 100_000 + "开炉就是吃火锅", "x是什么意思，" * 40_000]
many, laughing, asking = texts
print(json.dumps([len(explained_in(many)), sorted(set(explained_in(laughing))), len(asked_about(asking))]))
"""


def test_a_long_message_of_many_clauses_is_read_at_once() -> None:
    """Every clause start is tried, and each read the text's rest to its end (and "哈哈，哈哈，…" as
    fillers to its end): 20,000 characters took 1.5-2.5 s with the GIL held in the mining job. Read
    in a child process with a 120 s guard (it takes about a second; the quadratic reading needs
    several minutes for these 300,000 characters)."""
    found = read_in_child(MANY_CLAUSES_READER)
    assert found == [60_000, [["开炉", "吃火锅"]], 40_000]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("开炉就是去吃火锅", [("开炉", "去吃火锅")]),
        ("@Tom 开炉就是吃火锅啦～我们几个都这么说", [("开炉", "吃火锅")]),
        ("哈哈船长就是我们老板钱总，他开会老说一条船", [("船长", "我们老板钱总")]),
        ("“开炉”指的是吃火锅。", [("开炉", "吃火锅")]),
        ("所谓开炉，就是去吃火锅", [("开炉", "去吃火锅")]),
        ("其实开炉的意思是吃火锅", [("开炉", "吃火锅")]),
        ("开炉是吃火锅的意思", [("开炉", "吃火锅")]),
        ("开炉＝吃火锅", [("开炉", "吃火锅")]),
        ("ＹＹＤＳ = 永远的神", [("yyds", "永远的神")]),
        ("yyds means 永远的神", [("yyds", "永远的神")]),
        ("TBH stands for to be honest. Anyway", [("tbh", "to be honest")]),
        # The term is the clause's whole subject, never a part of a longer word.
        ("开炉子就是烧火", [("开炉子", "烧火")]),
        # Asking, negating, guessing, pointing or saying nothing is no explanation.
        ("开炉就是去吃火锅吗？", []),
        ("开炉就是去吃火锅，对吗？", []),
        ("开炉就是吃火锅吧", []),
        ("开炉不是去吃火锅", []),
        ("开炉的意思不是吃火锅", []),
        ("开炉就是这样", []),
        ("开炉是周五", []),
        ("yyds doesn't mean that", []),
    ],
)
def test_explanations_in_a_message(text: str, found: list[tuple[str, str]]) -> None:
    assert explained_in(text) == found


def test_a_long_meaning_is_cut_between_whole_characters() -> None:
    [(_term, meaning)] = explained_in("开炉就是" + "吃" * 50 + "👍🏽" + "吃" * 50)
    assert len(meaning) <= MAX_CHARS and meaning.endswith("…") and "\ufffd" not in meaning
    assert "👍" not in meaning or "👍🏽" in meaning, "a grapheme is never split"


def test_questions_about_a_term() -> None:
    assert asked_about("师兄，炼丹是什么意思😳") == ["炼丹"]
    assert asked_about("下饺子到底啥意思") == ["下饺子"]
    assert asked_about("啥叫开炉？") == ["开炉"]
    assert asked_about("what does YYDS mean?") == ["yyds"]
    assert asked_about("今天吃什么") == []


def _said(key: str, text: str, speaker: str, **extra: bool) -> MinerMessage:
    return MinerMessage(key, text, speaker, **extra)


def test_who_may_explain_and_which_explanation_wins() -> None:
    window = [
        _said("1", "炼丹是什么意思", "a"),
        _said("2", "就是训模型啦，调参跟炼丹一样玄学", "b"),  # a bare answer to the question
        _said("3", "开炉是啥", "c"),
        _said("4", "开炉就是吃火锅吗？", "c"),
        _said("5", "开炉就是吃火锅", "c"),  # the one who asked is guessing
        _said("6", "开炉就是吃烤肉", "d", forwarded=True),  # words written elsewhere
        _said("7", "开炉就是吃串串", "bot", is_bot=True),
        _said("8", "下饺子就是一起合PR", "e"),
        _said("9", "不对，下饺子就是周四一口气合PR", "f"),  # the latest wins
        _said("10", "what is 老地方?", "g"),
        _said("11", "老地方就是文二路那家", "h"),
        _said("12", "对，就是那家", "i"),  # answered already, and it only points
    ]
    found = {term: (said.meaning, said.message_key) for term, said in member_meanings(window).items()}
    assert found == {
        "炼丹": ("训模型", "2"),
        "下饺子": ("周四一口气合PR", "9"),
        "老地方": ("文二路那家", "11"),
    }


SETTINGS = MiningSettings(discovery=DiscoveryParams(min_lift=0.0, min_df=2))
USES = ["开炉开炉", "周五开炉吗", "开炉！", "开炉+1", "开炉带上我"]
FILLER = ["我晚点到", "好的", "收到", "周五见", "七点", "冲"]


async def _say(memory: MemoryService, chat: str, texts: list[str], start: int = 0) -> None:
    await memory.record_many(
        make_message(start + i, chat=chat, sender=f"u{i % 4}", text=t) for i, t in enumerate(texts)
    )


async def _meaning(memory: MemoryService, chat: int) -> tuple[str, str] | None:
    async with memory.db.read() as session:
        entry = await dictionary.lookup(session, "开炉", chat)
    return None if entry is None or not entry.explainable else (entry.meaning, entry.provenance)


async def test_a_members_meaning_stays_in_the_chat_it_was_said_in(memory: MemoryService) -> None:
    """Under the global scope a term both chats use is one shared candidate; a member of B explaining
    it gives B a meaning, and A (a group where 开炉 may well mean lighting a furnace) none."""
    a, b, _shared, _own = await explained_in_b(memory)
    assert await _meaning(memory, b) == ("去吃火锅", dictionary.MEMBER)
    assert await _meaning(memory, a) is None
    explainer = JargonExplainer(memory.db)
    assert [(f.term, f.meaning) for f in await explainer.explain(b, ["周五开炉吗"])] == [("开炉", "去吃火锅")]
    assert await explainer.explain(a, ["周五开炉吗"]) == []
    async with memory.db.read() as session:
        [own] = [e for e in await dictionary.list_entries(session, b) if e.chat_id == b]
        trail = await dictionary.reviews(session, own.id)
        [shown] = await dictionary.evidence(session, own.id, None)
    assert trail[-1]["action"] == dictionary.MEMBER_ACTION
    assert trail[-1]["new"]["message_id"] == shown.message.id
    assert shown.message.text == "开炉就是去吃火锅"


async def explained_in_b(memory: MemoryService) -> tuple[int, int, int, int]:
    """Chats A and B both use 开炉, a member of B explains it, and the job mines both under the global
    scope: (A, B, the shared entry's id, B's own entry's id)."""
    await _say(memory, "A", [*USES, *FILLER])
    await _say(memory, "B", [*USES, "开炉就是去吃火锅", *FILLER])
    await JargonMiningJob(memory.db, lambda: SETTINGS).run(T0)
    a, b = await chat_ids(memory, "A", "B")
    async with memory.db.read() as session:
        entries = await dictionary.list_entries(session)
    [shared] = [e.id for e in entries if e.chat_id is None]
    [own] = [e.id for e in entries if e.chat_id == b]
    return a, b, shared, own


async def test_a_members_meaning_is_listed_beside_the_shared_entry_counted_as_its_chat_used_the_term(
    memory: MemoryService,
) -> None:
    """Mining counts the shared entry; B's own entry, holding the member's meaning, was listed as ×0
    beside it ("开炉 ×0 [inferred]"). It is listed counted as B used the term, naming the shared entry,
    and a listing for A still never holds it."""
    a, b, shared, own = await explained_in_b(memory)
    async with memory.db.read() as session:
        per_chat = await dictionary.chat_counts(session, shared)
        listed = {e.id: e for e in await dictionary.list_entries(session)}
        in_b = [e.id for e in await dictionary.list_entries(session, b, min_count=per_chat[b])]
        in_a = [e.id for e in await dictionary.list_entries(session, a)]
        shown = await dictionary.get(session, own)
        own_counts = await dictionary.chat_counts(session, own)
    assert per_chat[b] == len(USES) + 1, "B said 开炉 in each use and in the explanation"
    assert (listed[own].count, listed[own].shared_id) == (per_chat[b], shared)
    assert (listed[shared].count, listed[shared].shared_id) == (sum(per_chat.values()), None)
    assert shown == listed[own] and own_counts == {b: per_chat[b]}
    assert in_b == [shared, own], "the most counted first; --min-count sees B's count"
    assert in_a == [shared]


async def test_a_term_explained_before_it_is_mined_gets_the_meaning_once_it_is(memory: MemoryService) -> None:
    """The README sample: 开炉 was explained in a window where it was said once, too rare to be mined,
    and mined from a later window; the explanation heard before is its meaning then."""
    job = JargonMiningJob(memory.db, lambda: SETTINGS)
    await _say(memory, "A", ["开炉就是去吃火锅", *FILLER, *FILLER])
    await job.run(T0)
    [a] = await chat_ids(memory, "A")
    async with memory.db.read() as session:
        assert await dictionary.lookup(session, "开炉", a) is None, "not mined yet"
    await _say(memory, "A", [*USES, *FILLER], start=100)
    await job.run(T0 + timedelta(minutes=5))
    assert await _meaning(memory, a) == ("去吃火锅", dictionary.MEMBER)


async def test_an_explanation_older_than_the_history_read_after_a_restart_is_the_meaning(
    tmp_path: Path,
) -> None:
    """A restarted job hears only the last `history_messages` before its cursor: 开炉, explained
    once, before the process restarted, and mined only afterwards, got no meaning. The job looks the
    explanation up in the chat's messages holding the term when the term first needs a meaning."""
    settings = dataclasses.replace(SETTINGS, history_messages=3 * len(FILLER))
    database = await Database.open(tmp_path / "data")
    try:
        await _say(MemoryService(database), "A", ["开炉就是去吃火锅", *FILLER * 3])
        await JargonMiningJob(database, lambda: settings).run(T0)  # said once: not mined
    finally:
        await database.close()
    database = await Database.open(tmp_path / "data")  # a restart: a new process on the same file
    try:
        memory = MemoryService(database)
        [a] = await chat_ids(memory, "A")
        async with database.read() as session:
            assert await dictionary.lookup(session, "开炉", a) is None, "not mined yet"
        await _say(memory, "A", [*USES, *FILLER], start=100)
        await JargonMiningJob(database, lambda: settings).run(T0 + timedelta(minutes=5))
        async with database.read() as session:
            assert await dictionary.lookup(session, "开炉", a) is not None, "mined now"
        assert await _meaning(memory, a) == ("去吃火锅", dictionary.MEMBER)
    finally:
        await database.close()


async def test_an_earlier_explanation_is_read_from_the_chats_own_messages_holding_the_term(
    memory: MemoryService,
) -> None:
    """The look-up finds a term jieba cuts one way alone and another way in the message (内|卷 alone,
    内卷 in "其实内卷指的是…"), a bare answer after a question about the term (which does not hold it),
    and never another chat's explanation."""
    await _say(memory, "A", ["其实内卷指的是无意义竞争", "炼丹是什么意思", "就是训模型啦", *FILLER])
    await _say(memory, "B", ["开炉就是去吃火锅", *FILLER])
    a, b = await chat_ids(memory, "A", "B")
    async with memory.db.read() as session:
        found = await explained_earlier(session, a, ["内卷", "炼丹", "开炉"], upto=10**9)
        in_b = await explained_earlier(session, b, ["开炉"], upto=10**9)
    assert sorted((m.term, m.meaning) for m in found) == [("内卷", "无意义竞争"), ("炼丹", "训模型")]
    assert [(m.term, m.meaning) for m in in_b] == [("开炉", "去吃火锅")]


async def test_an_admins_meaning_is_never_replaced(memory: MemoryService) -> None:
    settings = dataclasses.replace(SETTINGS, scope="chat")
    job = JargonMiningJob(memory.db, lambda: settings)
    await _say(memory, "A", [*USES, *FILLER])
    await job.run(T0)
    [a] = await chat_ids(memory, "A")
    async with memory.db.write() as session:
        entry = await dictionary.lookup(session, "开炉", a)
        assert entry is not None
        await dictionary.decide(session, [entry.id], "approve", "admin", 0.0, meaning="点火开工")
    await _say(memory, "A", ["开炉就是去吃火锅", *FILLER, *USES], start=100)
    await job.run(T0 + timedelta(minutes=5))
    assert await _meaning(memory, a) == ("点火开工", "manual")


async def test_a_deleted_explanation_takes_its_meaning_along(memory: MemoryService) -> None:
    job = JargonMiningJob(memory.db, lambda: SETTINGS)
    await _say(memory, "A", [*USES, "开炉就是去吃火锅", *FILLER])
    await job.run(T0)
    [a] = await chat_ids(memory, "A")
    assert await _meaning(memory, a) == ("去吃火锅", dictionary.MEMBER)
    await memory.delete(MessageDeletion("test", "A", f"m{len(USES)}"))
    assert await _meaning(memory, a) is None
    await _say(memory, "A", [*FILLER, *USES], start=100)
    await job.run(T0 + timedelta(minutes=5))
    assert await _meaning(memory, a) is None, "not brought back from what the job heard before"


@pytest.mark.parametrize("scope", ["chat", "global"])
async def test_the_model_sees_a_members_meaning_and_takes_over(
    memory: MemoryService, fake_llm: FakeOpenAI, clock: ManualClock, scope: dictionary.Scope
) -> None:
    async with model(fake_llm, memory, clock) as llm:
        await _say(memory, "A", [*USES, "开炉就是去吃火锅", *FILLER])
        settings = dataclasses.replace(SETTINGS, scope=scope)
        await JargonMiningJob(memory.db, lambda: settings).run(T0)  # no model yet
        [a] = await chat_ids(memory, "A")
        assert await _meaning(memory, a) == ("去吃火锅", dictionary.MEMBER)
        every_step = {"no_information": False, "meaning": "约着去吃火锅", "same": False}
        fake_llm.default = lambda _body: answer_json(every_step)
        await _say(memory, "A", FILLER * 2, start=100)
        report = await JargonMiningJob(memory.db, lambda: settings, llm).run(T0 + timedelta(minutes=5))
        assert report.inferred >= 1
        assert await _meaning(memory, a) == ("约着去吃火锅", "inferred")
        requests = [json.dumps(r.messages, ensure_ascii=False) for r in fake_llm.chat_requests]
        [asked] = [r for r in requests if "「开炉」" in r and "It appears in" in r]
        assert "开炉就是去吃火锅" in asked, "the explanation is among the evidence"
        if scope == "chat":  # the entry the model infers is the one holding the member's meaning
            assert "A member of the group said it means: 去吃火锅" in asked
