"""The topic check: triggers, the persisted cache, packing rules, and the LLM path with its fallbacks."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.app import build_app
from bot.config import ConfigStore
from bot.config.settings import Settings
from memory.clock import ManualClock
from memory.history.pack import PackOptions
from memory.models import ChatHistory, JobState, Message, TopicCacheEntry
from memory.ports import LLMUnavailable, Model
from memory.service import MemoryService
from memory.storage import Database
from memory.topics.cache import PackRules
from memory.topics.check import JOB, TopicCheck, TopicCheckSettings
from memory.types import ChatMessage
from tests.conftest import T0, make_message
from tests.query_plans import planned

SMALL = TopicCheckSettings(
    batch_size=5,
    max_wait=timedelta(hours=1),
    min_messages=3,
    pack=PackRules(idle_checks=2, max_fragments=2),
    pack_options=PackOptions(min_topic_messages=1),
)


def chain(start: int, count: int, text: str, **extra: object) -> list[Any]:
    """`count` messages from `start` on, each replying to the one before (one thread)."""
    senders = ["u1", "u2", "u3"]
    return [
        make_message(
            n, sender=senders[n % 3], text=f"{text} {n}", reply_to=f"m{n - 1}" if n > start else None, **extra
        )
        for n in range(start, start + count)
    ]


async def cached(db: Database) -> list[TopicCacheEntry]:
    async with db.read() as session:
        return list((await session.scalars(select(TopicCacheEntry).order_by(TopicCacheEntry.id))).all())


async def history_rows(db: Database) -> list[ChatHistory]:
    async with db.read() as session:
        return list((await session.scalars(select(ChatHistory).order_by(ChatHistory.id))).all())


async def test_count_trigger(memory: MemoryService) -> None:
    check = TopicCheck(memory.db, SMALL)
    await memory.record_many(chain(1, 4, "周末去九溪爬山"))
    now = T0 + timedelta(minutes=5)
    assert (await check.run_chat(1, now)).batches == 0
    await memory.record_many(chain(5, 1, "周末去九溪爬山"))
    report = await check.run_chat(1, now)
    assert report.batches == 1 and report.messages == 5 and report.path == ["count:offline"]
    assert report.created == 1
    entries = await cached(memory.db)
    assert sum(len(e.message_ids) for e in entries) == 5


async def test_a_run_finds_the_chats_with_new_messages_without_reading_every_message(
    memory: MemoryService,
) -> None:
    """Grouping all messages by chat for each chat's newest id read the whole database at every run."""
    check = TopicCheck(memory.db, SMALL)
    await memory.record_many([*chain(1, 5, "周末去九溪爬山"), *chain(10, 2, "火锅", chat="g2")])
    with planned(memory.db) as plans:
        reports = await check.run(T0 + timedelta(minutes=5))
    assert [(r.chat_id, r.messages) for r in reports] == [(1, 5), (2, 0)]
    whole = [(s, st) for s, steps in plans for st in steps if re.match(r"SCAN messages( |$)", st.detail)]
    assert whole == []


async def test_time_trigger_needs_age_and_min_messages(memory: MemoryService) -> None:
    check = TopicCheck(memory.db, SMALL)
    await memory.record_many(chain(0, 2, "火锅"))  # times T0, T0+1min
    assert (await check.run_chat(1, T0 + timedelta(hours=5))).batches == 0  # only 2 < min_messages
    await memory.record(make_message(2, text="火锅 开炉"))
    assert (await check.run_chat(1, T0 + timedelta(minutes=59))).batches == 0
    report = await check.run_chat(1, T0 + timedelta(minutes=61))
    assert report.path == ["time:offline"] and report.messages == 3


@pytest.mark.parametrize(
    ("dated", "due"),
    [
        (datetime(8999, 1, 1, tzinfo=UTC), True),  # a wrong clock: counts as waited max_wait
        (T0 + timedelta(hours=3), True),  # over max_wait (1 h) ahead of the run at T0 + 1 h
        (T0 + timedelta(hours=1, minutes=30), False),  # a little ahead: waits until it is max_wait old
        (datetime(1970, 1, 1, tzinfo=UTC), True),  # the earliest time accepted: long waited
    ],
    ids=["year-8999", "2h-ahead", "30min-ahead", "epoch"],
)
async def test_the_age_trigger_of_messages_all_dated_ahead_or_long_ago(
    memory: MemoryService, dated: datetime, due: bool
) -> None:
    """Waiting messages all dated in the year 8999 (a wrong clock, a broken import) had a negative age, so
    with the quiet rule off the chat was never checked until more messages came; one dated more than
    `max_wait` ahead now counts as having waited `max_wait`."""
    check = TopicCheck(memory.db, replace(SMALL, quiet_after=None))
    await memory.record_many(chain(0, 3, "煤球 猫咪 吐毛球", time=dated))
    report = await check.run_chat(1, T0 + timedelta(hours=1))
    assert (report.path, report.messages) == ((["time:offline"], 3) if due else ([], 0))


async def test_cache_and_disentangler_state_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    db = await Database.open(data)
    memory = MemoryService(db, ManualClock(T0))
    await memory.record_many(chain(1, 5, "staging 的 deploy 挂了 node-sass 编译失败"))
    await TopicCheck(db, SMALL).run_chat(1, T0 + timedelta(minutes=10))
    before = await cached(db)
    await db.close()

    db = await Database.open(data)
    memory = MemoryService(db, ManualClock(T0))
    assert [(e.id, e.message_ids, e.thread_keys) for e in await cached(db)] == [
        (e.id, e.message_ids, e.thread_keys) for e in before
    ]
    async with db.read() as session:
        state = await session.get(JobState, (JOB, 1))
        assert state is not None and state.cursor == 5 and state.data["disentangler"]["window"]
    # The thread continues after the restart: replies to m5 join the same cached topic.
    await memory.record_many(chain(6, 5, "staging 的 deploy 挂了 node-sass 编译失败"))
    await memory.record_many([make_message(6, reply_to="m5")])  # duplicate, ignored
    report = await TopicCheck(db, SMALL).run_chat(1, T0 + timedelta(minutes=20))
    assert report.batches == 1 and (report.created, report.updated) == (0, 1)
    after = await cached(db)
    assert len(after) == 1 and after[0].id == before[0].id
    assert after[0].message_ids == list(range(1, 11)) and after[0].fragment_count == 2
    await db.close()


async def test_packing_after_idle_checks_writes_history_with_true_times(memory: MemoryService) -> None:
    check = TopicCheck(memory.db, SMALL)
    await memory.record_many(chain(1, 5, "周六去九溪十八涧爬山 龙井村吃饭"))
    await check.run_chat(1, T0 + timedelta(hours=1))
    hike = (await cached(memory.db))[0]
    for start, text in ((100, "Tom 的女朋友小雨生日 拍立得"), (200, "煤球 猫咪 吐毛球 宠物医院")):
        await memory.record_many(chain(start, 5, text))
        report = await check.run_chat(1, T0 + timedelta(hours=5))
    assert [p.entry_id for p in report.packed] == [hike.id]
    assert hike.id not in {e.id for e in await cached(memory.db)}
    [row] = await history_rows(memory.db)
    assert row.source_message_ids == [1, 2, 3, 4, 5]
    assert row.start_time == (T0 + timedelta(minutes=1)).timestamp()
    assert row.end_time == (T0 + timedelta(minutes=5)).timestamp()
    assert (row.count, row.forget_times, row.provenance) == (0, 0, "offline")
    assert 3 <= len(row.keywords) <= 10 and "九溪" in row.keywords
    assert {p["user_id"] for p in row.participants} == {"u1", "u2", "u3"}
    assert "九溪" in row.theme or "爬山" in row.theme


async def test_packing_when_fragments_exceed_the_limit(memory: MemoryService) -> None:
    check = TopicCheck(memory.db, SMALL)
    for i in range(3):
        await memory.record_many(chain(1 + 5 * i, 5, "下饺子 发版 PR 合并"))
        report = await check.run_chat(1, T0 + timedelta(hours=1 + i))
        if i < 2:
            assert report.packed == []
    assert len(report.packed) == 1 and report.packed[0].messages == 15
    assert await cached(memory.db) == []
    [row] = await history_rows(memory.db)
    assert row.source_message_ids == list(range(1, 16))


class FakeLLM:
    """An LLMPort answering from a function of (task, messages); raising it makes the task fail."""

    def __init__(self, answer: Callable[[str, Sequence[dict[str, Any]]], Any]) -> None:
        self.answer = answer
        self.calls: list[str] = []

    def available(self, task: str) -> bool:
        return True

    async def complete_json(
        self, task: str, messages: Sequence[dict[str, Any]], schema: type[Model]
    ) -> Model:
        self.calls.append(task)
        return schema.model_validate(self.answer(task, messages))

    async def complete_text(self, task: str, messages: Sequence[dict[str, Any]]) -> str:
        raise LLMUnavailable(task, "text not used here")


LLM_SETTINGS = TopicCheckSettings(
    batch_size=6, max_wait=timedelta(hours=1), min_messages=3, use_llm=True, pack=PackRules(2, 5)
)


async def test_llm_ids_outside_the_batch_are_dropped(memory: MemoryService) -> None:
    await memory.record_many([make_message(n, text=f"闲聊 {n}") for n in range(1, 7)])
    await memory.record_many([make_message(50, chat="other", text="别的群")])
    llm = FakeLLM(
        lambda task, _m: {
            "topics": [
                {"topic": "午饭吃什么", "message_ids": [1, 2, 3, 999, 7]},
                {"topic": "周末爬山", "message_ids": [4, 5, 6, 2]},
            ]
        }
    )
    report = await TopicCheck(memory.db, LLM_SETTINGS, llm).run_chat(1, T0 + timedelta(hours=1))
    assert report.path == ["count:llm"] and report.dropped_ids == 3  # 999, 7 (other chat), 2 repeated
    entries = {e.title: e for e in await cached(memory.db)}
    assert entries["午饭吃什么"].message_ids == [1, 2, 3]
    assert entries["周末爬山"].message_ids == [4, 5, 6]
    assert {e.provenance for e in entries.values()} == {"llm"}


async def test_llm_titles_reuse_cached_topics_and_near_duplicates_merge(memory: MemoryService) -> None:
    titles = iter(["周末九溪爬山计划", "周末九溪爬山计划！"])
    llm = FakeLLM(lambda _t, m: {"topics": [{"topic": next(titles), "message_ids": ids_in(m)}]})
    check = TopicCheck(memory.db, LLM_SETTINGS, llm)
    await memory.record_many([make_message(n, text=f"爬山 {n}") for n in range(1, 7)])
    await check.run_chat(1, T0 + timedelta(hours=1))
    await memory.record_many([make_message(n, text=f"爬山 {n}") for n in range(7, 13)])
    await check.run_chat(1, T0 + timedelta(hours=2))
    [entry] = await cached(memory.db)
    assert entry.message_ids == list(range(1, 13)) and entry.fragment_count == 2


def ids_in(messages: Sequence[dict[str, Any]]) -> list[int]:
    """The message ids the topic prompt lists."""
    return [int(i) for i in re.findall(r"^\[(\d+)\]", messages[-1]["content"], re.M)]


async def test_malformed_or_unusable_llm_output_falls_back_offline(memory: MemoryService) -> None:
    def broken(_task: str, _m: Any) -> Any:
        raise LLMUnavailable("topic", "invalid JSON after one repair round")

    await memory.record_many(chain(1, 6, "火锅 开炉 老地方"))
    llm = FakeLLM(broken)
    report = await TopicCheck(memory.db, LLM_SETTINGS, llm).run_chat(1, T0 + timedelta(hours=1))
    assert llm.calls == ["topic"] and report.path == ["count:offline"]
    assert sum(len(e.message_ids) for e in await cached(memory.db)) == 6

    await memory.record_many(chain(7, 6, "火锅 开炉 老地方"))
    only_foreign = FakeLLM(lambda _t, _m: {"topics": [{"topic": "x", "message_ids": [999]}]})
    report = await TopicCheck(memory.db, LLM_SETTINGS, only_foreign).run_chat(1, T0 + timedelta(hours=2))
    assert report.path == ["count:offline"]
    assert sum(len(e.message_ids) for e in await cached(memory.db)) == 12


async def test_llm_summary_is_used_and_bad_summaries_fall_back(memory: MemoryService) -> None:
    digest = {"theme": "周日九溪爬山", "keywords": ["爬山", "九溪", "周日", "爬山"], "summary": "定在周日。"}
    llm = FakeLLM(
        lambda task, m: (
            digest if task == "summary" else {"topics": [{"topic": "爬山", "message_ids": ids_in(m)}]}
        )
    )
    settings = TopicCheckSettings(
        batch_size=6, use_llm=True, pack=PackRules(1, 0), pack_options=PackOptions(use_llm=True)
    )
    await memory.record_many(chain(1, 6, "周日去九溪爬山"))
    report = await TopicCheck(memory.db, settings, llm).run_chat(1, T0 + timedelta(hours=1))
    assert len(report.packed) == 1
    [row] = await history_rows(memory.db)
    assert (row.theme, row.provenance, row.summary) == ("周日九溪爬山", "llm", "定在周日。")
    assert row.keywords[:3] == ["爬山", "九溪", "周日"] and len(row.keywords) >= 3


async def test_batches_without_the_bot_can_be_skipped(memory: MemoryService) -> None:
    settings = TopicCheckSettings(batch_size=5, keep_batches_without_bot=False)
    await memory.record_many(chain(1, 5, "火锅"))
    report = await TopicCheck(memory.db, settings).run_chat(1, T0 + timedelta(hours=1))
    assert report.path == ["count:skipped"] and await cached(memory.db) == []
    await memory.record_many(
        [*chain(6, 4, "火锅"), make_message(10, sender="bot", text="火锅好", is_bot=True)]
    )
    report = await TopicCheck(memory.db, settings).run_chat(1, T0 + timedelta(hours=1))
    assert report.path == ["count:offline"] and await cached(memory.db)


async def test_run_covers_every_chat_with_new_messages(memory: MemoryService) -> None:
    await memory.record_many([*chain(1, 5, "火锅", chat="a"), *chain(1, 5, "爬山", chat="b")])
    reports = await TopicCheck(memory.db, SMALL).run(T0 + timedelta(hours=1))
    assert sorted((r.chat_id, r.batches) for r in reports) == [(1, 1), (2, 1)]


async def test_memory_commands_and_the_bots_answers_never_become_topics(tmp_path: Path) -> None:
    """The answers quote recalled memories (with global recall, other chats' too): packed into a topic
    they would come back in recall as this chat's own memory."""
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", ManualClock(T0))
    answers: list[int] = []

    async def send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
        answers.append(100 + len(answers))
        return make_message(answers[-1], sender="bot", text=text, is_bot=True)

    try:
        await app.pipeline.handle(make_message(0, text="周六去西湖边爬山，带上烧烤架"), send)
        for n in range(1, 8):
            await app.pipeline.handle(make_message(n, sender=f"u{n % 3}", text="/recall 西湖 烧烤架"), send)
        assert len(answers) == 7
        check = TopicCheck(app.db, replace(SMALL, pack=PackRules(idle_checks=1, max_fragments=1)))
        await check.run_chat(1, T0 + timedelta(hours=2), force=True)
        await app.memory.record(make_message(50, text="晚上吃什么"))
        await check.run_chat(1, T0 + timedelta(hours=3), force=True)
        rows = await history_rows(app.db)
        used = {i for row in rows for i in row.source_message_ids}
        used |= {i for e in await cached(app.db) for i in e.message_ids}
        async with app.db.read() as session:
            talk = (Message.text == "周六去西湖边爬山，带上烧烤架") | (Message.text == "晚上吃什么")
            members = set((await session.scalars(select(Message.id).where(talk))).all())
        assert used == members, "only member talk is in topics"
        hits = await app.memory.search([1], "烧烤架")
        assert hits and not [h for h in hits if "我记得" in h.text], "no answer echoes back in recall"
    finally:
        await app.close()


async def test_old_history_imported_after_live_talk_gets_topics_of_its_own_time(
    memory: MemoryService,
) -> None:
    check = TopicCheck(
        memory.db, replace(SMALL, batch_size=10, pack=PackRules(idle_checks=2, max_fragments=5))
    )
    await memory.record_many(chain(0, 10, "周末去九溪爬山 带水"))
    await check.run_chat(1, T0 + timedelta(minutes=20))
    month_ago = T0 - timedelta(days=60)
    await memory.record_many(
        [
            make_message(100 + n, text=f"周末去九溪爬山 {n}", time=month_ago + timedelta(minutes=n))
            for n in range(10)
        ]
    )
    await check.run_chat(1, T0 + timedelta(minutes=40))
    entries = await cached(memory.db)
    spans = sorted((e.first_time, e.last_time) for e in entries)
    assert len(entries) == 2 and all(last - first < 3600 for first, last in spans), (
        "no topic spans the months"
    )
    assert spans[0][0] == month_ago.timestamp() and spans[1][0] == T0.timestamp()


async def test_a_quiet_chat_checks_its_last_few_messages_and_packs_every_cached_topic(
    memory: MemoryService,
) -> None:
    check = TopicCheck(memory.db, SMALL)
    await memory.record_many(chain(1, 5, "周六去九溪十八涧爬山 龙井村吃饭"))
    await check.run_chat(1, T0 + timedelta(hours=1))
    await memory.record_many(chain(10, 2, "煤球 猫咪 吐毛球"))  # fewer than min_messages
    later = await check.run_chat(1, T0 + timedelta(hours=23))
    assert later.batches == 0 and later.packed == [] and len(await cached(memory.db)) == 1

    report = await check.run_chat(1, T0 + timedelta(hours=25))
    assert report.path == ["quiet:offline"] and report.messages == 2
    assert await cached(memory.db) == []
    packed = sorted(i for row in await history_rows(memory.db) for i in row.source_message_ids)
    assert packed == list(range(1, 8))


async def test_a_message_dated_far_ahead_does_not_keep_its_chat_from_ever_counting_as_quiet(
    memory: MemoryService,
) -> None:
    """One message dated in the year 8999 made the chat's newest time never a day old: its last waiting
    messages and its cached topics were never packed by the quiet rule."""
    check = TopicCheck(memory.db, SMALL)
    await memory.record_many(chain(1, 5, "周六去九溪十八涧爬山 龙井村吃饭"))
    await check.run_chat(1, T0 + timedelta(hours=1))
    far = datetime(8999, 1, 1, tzinfo=UTC)
    await memory.record_many([*chain(10, 1, "煤球 猫咪 吐毛球"), *chain(11, 1, "煤球 猫咪", time=far)])
    report = await check.run_chat(1, T0 + timedelta(hours=25))
    assert report.path == ["quiet:offline"] and report.messages == 2
    assert await cached(memory.db) == []
    packed = sorted(i for row in await history_rows(memory.db) for i in row.source_message_ids)
    assert packed == list(range(1, 8))


async def test_a_message_dated_a_little_ahead_still_keeps_its_chat_awake(memory: MemoryService) -> None:
    """A clock a few minutes fast is no reason to pack the talk that has just begun."""
    check = TopicCheck(memory.db, SMALL)
    await memory.record_many(chain(1, 5, "周六去九溪十八涧爬山 龙井村吃饭"))
    await check.run_chat(1, T0 + timedelta(hours=1))
    now = T0 + timedelta(hours=25)
    await memory.record_many(chain(10, 2, "煤球 猫咪 吐毛球", time=now + timedelta(minutes=5)))
    report = await check.run_chat(1, now)
    assert report.batches == 0 and report.packed == [] and len(await cached(memory.db)) == 1


async def test_the_quiet_rule_can_be_turned_off(memory: MemoryService) -> None:
    check = TopicCheck(memory.db, replace(SMALL, quiet_after=None))
    await memory.record_many(chain(1, 5, "周六去九溪十八涧爬山 龙井村吃饭"))
    await check.run_chat(1, T0 + timedelta(hours=1))
    report = await check.run_chat(1, T0 + timedelta(days=30))
    assert report.packed == [] and len(await cached(memory.db)) == 1


async def test_a_backlog_of_old_messages_is_not_flushed_before_it_is_all_checked(
    memory: MemoryService,
) -> None:
    """Imported history is old at once; its topics may go on across batches until the backlog is done."""
    check = TopicCheck(memory.db, replace(SMALL, max_batches_per_run=1))
    await memory.record_many(chain(1, 12, "周六去九溪十八涧爬山 龙井村吃饭"))
    first = await check.run_chat(1, T0 + timedelta(days=3))
    assert first.path == ["count:offline"] and first.packed == []
    assert [len(e.message_ids) for e in await cached(memory.db)] == [5]
    second = await check.run_chat(1, T0 + timedelta(days=3))
    assert second.path == ["count:offline", "quiet:offline"] and second.messages == 7
    assert await cached(memory.db) == []
    [row] = await history_rows(memory.db)
    assert row.source_message_ids == list(range(1, 13))


async def test_a_topic_over_the_fragment_limit_is_packed_before_the_next_batch_of_the_run(
    memory: MemoryService,
) -> None:
    """Packing follows each check, as in MaiBot: a run of several batches does not let a ready topic
    grow past its limit."""
    check = TopicCheck(memory.db, SMALL)  # 5 messages a batch, packed at more than 2 fragments
    await memory.record_many(chain(1, 20, "下饺子 发版 PR 合并"))
    report = await check.run_chat(1, T0 + timedelta(hours=1))
    assert report.batches == 4
    [row] = await history_rows(memory.db)
    assert row.source_message_ids == list(range(1, 16))
    assert [e.message_ids for e in await cached(memory.db)] == [list(range(16, 21))]


async def test_a_topic_idle_for_enough_checks_is_packed_before_a_later_batch_of_the_run_revives_it(
    memory: MemoryService,
) -> None:
    check = TopicCheck(memory.db, SMALL)  # packed after 2 checks without news
    hike = chain(1, 5, "周六去九溪十八涧爬山 龙井村吃饭")
    gift = chain(100, 5, "Tom 的女朋友小雨生日 拍立得")
    cat = chain(200, 5, "煤球 猫咪 吐毛球 宠物医院")
    more = chain(6, 5, "周六去九溪十八涧爬山 龙井村吃饭")
    await memory.record_many([*hike, *gift, *cat, *more])
    report = await check.run_chat(1, T0 + timedelta(hours=1))
    assert report.batches == 4
    packed = [row.source_message_ids for row in await history_rows(memory.db)]
    assert [1, 2, 3, 4, 5] in packed


FAREWELL = [
    "昨晚说好了，大伟的欢送会别搞太晚",
    "欢送会放在周四晚上吧，老张烧烤",
    "昨晚我来订了包间，别搞复杂",
    "周四晚上欢送会我来",
    "那我们昨晚说的礼物谁去买",
]


async def test_a_collecting_topic_is_titled_by_the_words_a_packed_one_would_be(memory: MemoryService) -> None:
    """Found replaying the README's sample: topics still collecting were titled "不接、冻结" and
    "朋友圈、人点、我发" by their heaviest terms, while a packed topic's title leaves out words that
    only say when, who or how (`is_topic_word`). Both now choose their words one way."""
    messages = [
        make_message(n, sender=f"u{n}", text=text, reply_to=f"m{n - 1}" if n > 1 else None)
        for n, text in enumerate(FAREWELL, start=1)
    ]
    await memory.record_many(messages)
    await TopicCheck(memory.db, SMALL).run_chat(1, T0 + timedelta(minutes=10))
    (entry,) = await cached(memory.db)
    assert entry.provenance == "offline"
    assert entry.title == "欢送会、包间、大伟"
