"""Offline digest, near-duplicate titles, reinforcement and the packing transaction."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from sqlalchemy import select

from memory.context.recall_provider import memory_line
from memory.history import offline_digest, pack_entry, reinforce, title_ratio
from memory.history.digest import theme_from
from memory.history.pack import PackOptions
from memory.history.source import SourceMessage, by_ids
from memory.history.titles import most_similar
from memory.models import ChatHistory, Message, TopicCacheEntry
from memory.recall.query import RecallHit
from memory.service import MemoryService
from memory.storage.fts import bm25_search, match_expression
from memory.topics import cache
from memory.topics.check import topic_prompt
from memory.types import MessageDeletion
from tests.conftest import T0, make_message


def source(i: int, text: str, name: str = "阿红｜前端", user: str = "u1") -> SourceMessage:
    return SourceMessage(
        id=i, chat_id=1, platform_message_id=f"m{i}", person_id=1, user_id=user, names=(name,), text=text,
        time=(T0 + timedelta(minutes=i)).timestamp(), utc_offset_minutes=480, reply_to=None, mentions=(),
        is_bot=False,
    )  # fmt: skip


HIKE = [
    source(1, "周末去九溪十八涧爬山吧，从九溪走到龙井村"),
    source(2, "九溪好，春天溪水多", "莉莉-产品", "u2"),
    source(3, "哈哈哈", "浩子｜运维", "u3"),
    source(4, "@阿红 龙井村中午吃农家菜，龙井虾仁", "浩子｜运维", "u3"),
    source(5, "阿红 我带登山杖和急救包", "Tom（汤姆）", "u4"),
]


def test_offline_digest_has_3_to_10_keywords_a_theme_and_central_points() -> None:
    found = offline_digest(HIKE)
    assert 3 <= len(found.keywords) <= 10
    assert {"九溪", "龙井村"} <= set(found.keywords)
    assert "阿红" not in found.keywords and "哈哈哈" not in found.keywords  # names and filler left out
    assert found.theme.split("、")[0] == found.keywords[0]
    assert found.provenance == "offline"
    assert all("哈哈哈" not in p for p in found.key_points)
    assert "九溪" in found.summary


RAID = [
    source(1, "the raid isn't happening, Bobby can't tank tonight", "Liz", "u1"),
    source(2, "we didn't even start and the raid's off? don't tell me the tank's sick", "Sam", "u2"),
    source(3, "y'all won't believe it, Bobby's tank keyboard broke. raid tomorrow then", "Pri", "u3"),
    source(4, "doesn't matter, raid tomorrow works, I'll bring the pizza", "Jordo", "u4"),
]


def test_offline_keywords_leave_out_time_words_pronouns_and_light_verbs() -> None:
    """Found by QA pass 16: an offline topic about a farewell dinner was titled "昨晚、别搞、欢送会".
    Keywords that only say when, who or how, by jieba's tags (time words, pronouns, function words,
    a verb led by an adverb), are left out, so the title names the dinner and what goes with it."""
    farewell = [
        source(1, "昨晚说好了，大伟的欢送会别搞太晚"),
        source(2, "欢送会放在周四晚上吧，老张烧烤", "杰哥", "u2"),
        source(3, "昨晚我来订了包间，别搞复杂", "红姐", "u3"),
        source(4, "周四晚上欢送会我来", "静静", "u4"),
        source(5, "那我们昨晚说的礼物谁去买", "洋洋", "u5"),
    ]
    found = offline_digest(farewell)
    assert found.theme == "欢送会、包间、大伟"
    assert not {"昨晚", "周四", "晚上", "别搞", "我来", "我来订"} & set(found.keywords)
    assert {"烧烤", "礼物"} <= set(found.keywords)


def test_english_keywords_hold_no_piece_of_a_contraction() -> None:
    found = offline_digest(RAID)
    assert {"raid", "tank", "bobby"} <= set(found.keywords)
    assert not {"isn", "didn", "don", "doesn", "won", "ll"} & set(found.keywords)


def test_an_english_topic_is_titled_and_summarised_without_chinese_punctuation() -> None:
    found = offline_digest(RAID)
    assert found.theme == ", ".join(found.keywords[:3])
    assert "（" not in found.summary and "、" not in found.summary
    # A Chinese topic keeps its Chinese forms, and so does a title of Chinese keywords.
    assert theme_from(["九溪", "龙井村"]) == "九溪、龙井村" and theme_from(["raid", "tank"]) == "raid, tank"


def test_a_recalled_offline_topic_names_its_participants_once() -> None:
    """Found by QA pass 16: a recalled topic's line listed its participants twice, "(老赵, 红姐, …):"
    from the line and again "（老赵、红姐…）" at the end of the offline summary. The summary is now its
    central messages, each with its speaker; who took part is the line's list alone."""
    found = offline_digest(HIKE)
    names = ["阿红", "莉莉", "浩子", "Tom"]
    line = memory_line(
        RecallHit("history", 1, 1, found.summary, ", ".join(names), T0, 0.0, theme=found.theme)
    )
    assert line.startswith(f"[topic {T0:%Y-%m-%d}] {found.theme} (阿红, 莉莉, 浩子, Tom): ")
    quoted = [point.split(":")[0] for point in found.summary.split(" / ")]
    assert quoted == ["阿红｜前端", "浩子｜运维"]
    assert line.count("莉莉") == 1 and line.count("Tom") == 1


def test_textrank_keywords_also_work() -> None:
    assert "九溪" in offline_digest(HIKE, "textrank").keywords


def test_near_duplicate_titles() -> None:
    assert title_ratio("周末爬山计划", "周末爬山计划！") == 1.0
    assert title_ratio("staging deploy 挂了", "Staging Deploy挂了") == 1.0
    assert title_ratio("周末爬山计划", "周末吃火锅") < 0.9
    assert most_similar("周末爬山计划!", [(1, "火锅"), (2, "周末爬山计划")], 0.9) == 2
    assert most_similar("周末爬山", [(1, "火锅")], 0.9) is None


async def test_reinforce_counts_each_row_once_per_call(memory: MemoryService) -> None:
    await memory.record(make_message(1))
    async with memory.db.write() as session:
        rows = [
            ChatHistory(
                chat_id=1,
                theme=t,
                keywords=[],
                summary="",
                key_points=[],
                original_text="",
                participants=[],
                start_time=0.0,
                end_time=0.0,
                source_message_ids=[],
                created_at=0.0,
            )
            for t in ("a", "b")
        ]
        session.add_all(rows)
    async with memory.db.write() as session:
        assert await reinforce(session, [rows[0].id, rows[0].id, 999]) == 1
    async with memory.db.read() as session:
        counts = dict((await session.execute(select(ChatHistory.theme, ChatHistory.count))).all())
    assert counts == {"a": 1, "b": 0}


async def make_entry(memory: MemoryService, texts: list[str]) -> int:
    await memory.record_many([make_message(n, text=t) for n, t in enumerate(texts, start=1)])
    async with memory.db.write() as session:
        ids = list((await session.scalars(select(Message.id).order_by(Message.id))).all())
        entry = cache.new_entry(1, "title", T0)
        session.add(entry)
        await session.flush()
        async with memory.db.read() as reader:
            cache.add_fragment(entry, await by_ids(reader, ids), ["m1"], T0)
        return entry.id


def test_a_topic_starting_at_the_epoch_keeps_its_start_time() -> None:
    """A first time of 0.0 (1970-01-01T00:00Z) was taken for unset: the next fragment moved the start."""
    entry = cache.new_entry(1, "title", T0)
    at_epoch, later = replace(source(1, "元旦零点"), time=0.0), replace(source(2, "新年好"), time=60.0)
    cache.add_fragment(entry, [at_epoch], ["m1"], T0)
    cache.add_fragment(entry, [later], ["m1"], T0)
    assert (entry.first_time, entry.last_time) == (0.0, 60.0)


async def test_pack_writes_history_indexes_it_and_removes_the_entry(memory: MemoryService) -> None:
    entry_id = await make_entry(memory, ["周六去九溪爬山", "九溪十八涧不累", "龙井村吃饭"])
    packed = await pack_entry(memory.db, entry_id, T0 + timedelta(hours=1), None, PackOptions())
    assert packed is not None and packed.history_id is not None and packed.messages == 3
    async with memory.db.read() as session:
        assert await session.get(TopicCacheEntry, entry_id) is None
        row = await session.get(ChatHistory, packed.history_id)
        assert row is not None and row.source_message_ids == [1, 2, 3]
        assert "九溪" in row.original_text and row.original_text.count("\n") == 2
        match = match_expression("九溪")
        assert match is not None
        assert [r for r, _ in await bm25_search(session, "chat_history_fts", match, 5)] == [row.id]


async def test_small_topics_are_dropped_without_a_row(memory: MemoryService) -> None:
    entry_id = await make_entry(memory, ["好的"])
    packed = await pack_entry(memory.db, entry_id, T0, None, PackOptions(min_topic_messages=2))
    assert packed is not None and packed.history_id is None
    async with memory.db.read() as session:
        assert await session.get(TopicCacheEntry, entry_id) is None
        assert (await session.scalars(select(ChatHistory))).all() == []


async def test_topic_sources_name_speakers_as_their_chat_does(memory) -> None:
    """Summaries quote people by the name this chat uses for them (a self-declared 老赵), not a card."""
    from memory.history import source
    from memory.persons.config import PersonsConfig
    from memory.persons.service import PersonMemory
    from tests.conftest import make_message

    PersonMemory(memory.db, PersonsConfig).attach(memory)
    await memory.record(make_message(1, sender="u5", sender_card="赵一鸣", text="以后叫我老赵就行"))
    said = await memory.record(make_message(2, sender="u5", sender_card="赵一鸣", text="周日可以"))
    async with memory.db.read() as session:
        [message] = await source.by_ids(session, [said.message_id])
    assert message.display_name == "老赵"
    assert "赵一鸣" in message.names


async def test_a_stored_forward_is_marked_in_the_topic_and_summary_prompts(memory: MemoryService) -> None:
    await memory.record(make_message(1, sender="u2", sender_card="小红", text="明天全员停电", forwarded=True))
    await memory.record(make_message(2, sender="u3", sender_card="小明", text="那我在家"))
    async with memory.db.read() as session:
        ids = list((await session.scalars(select(Message.id).order_by(Message.id))).all())
        sources = await by_ids(session, ids)
    assert [m.forwarded for m in sources] == [True, False], "read from the stored column"
    prompt = topic_prompt([("停电", sources[:1])], sources)[1]["content"].splitlines()
    assert "- 停电: (forwarded) 小红: 明天全员停电" in prompt
    assert f"[{ids[0]}] 03-01 12:01 (forwarded) 小红: 明天全员停电" in prompt
    assert f"[{ids[1]}] 03-01 12:02 小明: 那我在家" in prompt


async def test_a_forward_is_marked_in_the_packed_text_and_stays_so_when_the_row_is_rebuilt(
    memory: MemoryService,
) -> None:
    """The verbatim text of a topic holding a forward marks it as the topic prompt does; rebuilt when
    another of its messages is deleted, the row keeps the mark on the forward's line only."""
    await memory.record_many(
        [
            make_message(1, sender="u2", sender_card="小红", text="通知：明天九溪全线停电", forwarded=True),
            make_message(2, sender="u3", sender_card="小明", text="九溪那边也停吗"),
            make_message(3, sender="u2", sender_card="小红", text="九溪也停，我刚问了物业"),
        ]
    )
    async with memory.db.write() as session:
        ids = list((await session.scalars(select(Message.id).order_by(Message.id))).all())
        entry = cache.new_entry(1, "停电", T0)
        session.add(entry)
        await session.flush()
        cache.add_fragment(entry, await by_ids(session, ids), ["m1"], T0)
    packed = await pack_entry(memory.db, entry.id, T0 + timedelta(hours=1), None, PackOptions())
    assert packed is not None and packed.history_id is not None
    async with memory.db.read() as session:
        row = await session.get(ChatHistory, packed.history_id)
        assert row is not None
        assert row.original_text.splitlines() == [
            "2026-03-01 12:01 (forwarded) 小红: 通知：明天九溪全线停电",
            "2026-03-01 12:02 小明: 九溪那边也停吗",
            "2026-03-01 12:03 小红: 九溪也停，我刚问了物业",
        ]
    assert await memory.delete(MessageDeletion("test", "g1", "m2"))
    async with memory.db.read() as session:
        rebuilt = await session.get(ChatHistory, packed.history_id)
        assert rebuilt is not None and rebuilt.source_message_ids == [ids[0], ids[2]]
        assert rebuilt.original_text.splitlines() == [
            "2026-03-01 12:01 (forwarded) 小红: 通知：明天九溪全线停电",
            "2026-03-01 12:03 小红: 九溪也停，我刚问了物业",
        ]
