"""Merging one chat's memory into another's (memory.chat_merge) on a real database: messages with
clashing platform ids and replies, recall, people and jargon folded, job cursors, notes, and a third
chat that must not change."""

from __future__ import annotations

import unicodedata
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import select

from memory.chat_merge import HANDLED, ChatMergeError, follow_move, merge_chats
from memory.embeddings.store import save_vectors
from memory.history import source
from memory.jargon import dictionary
from memory.models import (
    Base,
    Chat,
    ChatMember,
    DeletedMessage,
    EmbeddingVector,
    Jargon,
    JargonChatCount,
    JargonEvidence,
    JobState,
    Message,
    PersonAlias,
    PersonAliasVersion,
    PersonChatName,
    PersonFact,
    TopicCacheEntry,
)
from memory.notes import NoteScopes
from memory.notes import store as note_store
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.service import MemoryService
from memory.storage import Database
from memory.storage.fts import indexed_tokens
from memory.topics.check import JOB as TOPIC_CHECK
from memory.topics.check import TopicCheck, TopicCheckSettings
from memory.turn_windows import WINDOWS_FTS
from memory.types import ChatMessage, MessageDeletion, Segment, SegmentKind
from tests.conftest import T0
from tests.memory.jargon.jargon_helpers import NOW, mine

# A test table's column named like a chat reference but not `chat_id` would escape `chat_columns`;
# this list is built independently of it.
CHAT_REFERENCES = ("chat_id",)


def _message(chat: str, n: int, text: str, sender: str = "u1", **extra: Any) -> ChatMessage:
    """Message `n` of `chat`; its platform id is `n` alone, as Telegram numbers a chat's messages."""
    return ChatMessage(
        platform="test",
        chat_id=chat,
        message_id=str(n),
        sender_id=sender,
        sender_name=f"nick-{sender}",
        text=text,
        time=T0 + timedelta(minutes=n),
        **extra,
    )


async def _chat_id(memory: MemoryService, key: str) -> int:
    found = await memory.chat("test", key)
    assert found is not None
    return found.id


async def _rows_of(db: Database, chat_id: int) -> dict[str, list[tuple[Any, ...]]]:
    """Every row that names `chat_id` in any table with a chat column, as plain tuples."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    async with db.read() as session:
        for table in Base.metadata.sorted_tables:
            for column in table.columns:
                if column.name in CHAT_REFERENCES:
                    found = await session.execute(select(table).where(column == chat_id))
                    rows[table.name] = sorted(tuple(r) for r in found)
        chat = await session.get(Chat, chat_id)
        assert chat is not None
        rows["chats"] = [(chat.id, chat.platform, chat.platform_chat_id, chat.name)]
    return rows


def test_every_table_with_a_chat_column_is_handled() -> None:
    """A table added later with a chat column must be handled by the merge, or its rows of the merged
    chat would be lost (deleted with the chat, or left pointing at nothing)."""
    with_chat = set()
    for table in Base.metadata.sorted_tables:
        for column in table.columns:
            to_chats = any(fk.column.table.name == "chats" for fk in column.foreign_keys)
            if column.name in CHAT_REFERENCES or column.name.endswith("chat_id") or to_chats:
                if table.name != "chats":
                    with_chat.add(table.name)
    assert with_chat, "the models have chat columns"
    assert with_chat - set(HANDLED) == set(), "tables with a chat column the chat merge does not handle"


async def test_messages_move_with_clashing_ids_and_replies_and_recall_finds_them(
    memory: MemoryService, db: Database
) -> None:
    await memory.record_many(
        [
            _message("old", 1, "周六去爬山吗"),
            _message("old", 2, "香山还是八达岭", sender="u2"),
            _message("old", 3, "八达岭吧 人少", reply_to="2"),
        ]
    )
    await memory.record_many([_message("new", 1, "群升级了", sender="u2", reply_to=None)])
    await memory.record_many([_message("other", 1, "八达岭 别的群也在聊")])
    old, new, other = [await _chat_id(memory, k) for k in ("old", "new", "other")]
    before_other = await _rows_of(db, other)

    report = await merge_chats(db, old, new, now=NOW)

    assert (report.messages, report.replies, report.prefix) == (3, 1, "old/")
    async with db.read() as session:
        rows = (
            await session.scalars(select(Message).where(Message.chat_id == new).order_by(Message.id))
        ).all()
        assert await session.get(Chat, old) is None
    assert [(m.platform_message_id, m.reply_to) for m in rows] == [
        ("old/1", None),
        ("old/2", None),
        ("old/3", "old/2"),
        ("1", None),
    ]
    assert await memory.chat("test", "old") is None
    later = await memory.record(_message("new", 2, "周日也行", reply_to="1"))
    assert later.created and not later.clash, "the supergroup's next message ids do not clash"
    hits = await memory.search([new], "八达岭")
    assert {h.id for h in hits if h.kind == "message"} >= {rows[1].id, rows[2].id}
    assert await _rows_of(db, other) == before_other, "a third chat does not change"


async def test_messages_deleted_on_the_platform_stay_deleted_after_a_merge(
    memory: MemoryService, db: Database
) -> None:
    await memory.record_many([_message("old", 1, "周六去爬山吗"), _message("old", 2, "手机号 13800000000")])
    await memory.record_many([_message("new", 1, "群升级了")])
    await memory.delete(MessageDeletion("test", "old", "2"))
    old, new = await _chat_id(memory, "old"), await _chat_id(memory, "new")
    await merge_chats(db, old, new, now=NOW)
    assert (await memory.record(_message("new", 2, "手机号 13800000000"))).created, "the new chat's own 2"
    assert (await memory.record(replace(_message("new", 3, "周日"), message_id="old/2"))).erased
    async with db.read() as session:
        tombstones = (
            await session.execute(select(DeletedMessage.chat_id, DeletedMessage.platform_message_id))
        ).all()
    assert [tuple(t) for t in tombstones] == [(new, "old/2")]


async def test_a_message_deleted_after_a_merge_is_no_longer_quoted_in_the_replies_to_it(
    memory: MemoryService, db: Database
) -> None:
    """The reply's quote segment names the platform's id as sent ("1"), the merge renamed only the
    reply link ("old/1"): the quote was looked up by the renamed id and the deleted words stayed."""
    quote = Segment(SegmentKind.REPLY, "我住在杭州滨江", "1")
    await memory.record_many(
        [
            _message("old", 1, "我住在杭州滨江"),
            _message(
                "old", 2, "离我好近", reply_to="1", segments=(quote, Segment(SegmentKind.TEXT, "离我好近"))
            ),
        ]
    )
    await memory.record(_message("new", 1, "群升级了"))
    await merge_chats(db, await _chat_id(memory, "old"), new := await _chat_id(memory, "new"), now=NOW)
    assert await memory.delete(MessageDeletion("test", "old", "1")) is True
    async with db.read() as session:
        segments = await session.scalar(
            select(Message.segments).where(Message.chat_id == new, Message.text == "离我好近")
        )
    assert "杭州" not in str(segments)


async def _stored(db: Database, chat_id: int) -> list[tuple[str, str | None, str]]:
    """(platform id, reply link, text) of a chat's messages, oldest first."""
    async with db.read() as session:
        rows = await session.execute(
            select(Message.platform_message_id, Message.reply_to, Message.text)
            .where(Message.chat_id == chat_id)
            .order_by(Message.time, Message.id)
        )
    return [tuple(r) for r in rows]


async def test_an_import_of_the_merged_chat_lands_in_the_chat_it_went_into(
    memory: MemoryService, db: Database
) -> None:
    """The admin imports the old group's export after the merge: it used to make the old chat again,
    splitting the group's memory and storing its messages twice."""
    old_export = [
        _message("old", 1, "周六去爬山吗"),
        _message("old", 2, "手机号 13800000000", sender="u2"),
        _message("old", 3, "八达岭吧", reply_to="1"),
    ]
    await memory.record_many(old_export)
    await memory.record(_message("new", 1, "群升级了", sender="u2"))
    await memory.delete(MessageDeletion("test", "old", "2"))
    await merge_chats(db, await _chat_id(memory, "old"), new := await _chat_id(memory, "new"), now=NOW)

    report = await memory.record_many([*old_export, _message("old", 4, "好 人少", reply_to="3")])
    assert (report.created, report.duplicates, report.erased) == (1, 2, 1)
    assert await memory.chat("test", "old") is None, "the merged chat is not made again"
    assert await _stored(db, new) == [
        ("old/1", None, "周六去爬山吗"),
        ("1", None, "群升级了"),
        ("old/3", "old/1", "八达岭吧"),
        ("old/4", "old/3", "好 人少"),
    ]
    assert await memory.delete(MessageDeletion("test", "old", "3")) is True, "a late deletion follows too"
    assert [p for p, _, _ in await _stored(db, new)] == ["old/1", "1", "old/4"]
    assert (await memory.record(_message("old", 3, "八达岭吧"))).erased


async def test_a_chat_merged_twice_still_leads_to_where_its_memory_is(
    memory: MemoryService, db: Database
) -> None:
    """a into b, then b into c: what arrives under a's or b's key goes to c, named as the two merges
    renamed the messages they moved."""
    for chat in ("a", "b", "c"):
        await memory.record(_message(chat, 1, f"hi from {chat}"))
    a, b, c = [await _chat_id(memory, k) for k in ("a", "b", "c")]
    await merge_chats(db, a, b, now=NOW)
    await merge_chats(db, b, c, now=NOW)
    report = await memory.record_many(
        [_message("a", 1, "hi from a"), _message("b", 1, "hi from b"), _message("a", 2, "new in a")]
    )
    assert (report.created, report.duplicates) == (1, 2)
    assert [p for p, _, _ in await _stored(db, c)] == ["b/a/1", "b/1", "1", "b/a/2"]
    assert [await memory.chat("test", k) for k in ("a", "b")] == [None, None]


async def test_a_merge_into_itself_or_of_a_missing_chat_is_refused(
    memory: MemoryService, db: Database
) -> None:
    await memory.record(_message("a", 1, "hi"))
    a = await _chat_id(memory, "a")
    with pytest.raises(ChatMergeError, match="itself"):
        await merge_chats(db, a, a, now=NOW)
    with pytest.raises(ChatMergeError, match="no chat"):
        await merge_chats(db, a + 99, a, now=NOW)


async def test_a_dry_run_changes_nothing_and_says_what_would_move(
    memory: MemoryService, db: Database
) -> None:
    await memory.record_many([_message("a", 1, "one"), _message("a", 2, "two")])
    await memory.record(_message("b", 1, "three"))
    a, b = await _chat_id(memory, "a"), await _chat_id(memory, "b")
    before = (await _rows_of(db, a), await _rows_of(db, b))
    report = await merge_chats(db, a, b, now=NOW, dry_run=True)
    assert report.dry_run and report.messages == 2
    assert report.summary().startswith("would merge test:a into test:b: 2 messages")
    assert (await _rows_of(db, a), await _rows_of(db, b)) == before


async def test_people_fold_as_one_chat(memory: MemoryService, db: Database) -> None:
    """Memberships add up, an alias both chats know folds into one, a name moves unless taken, and
    the same fact learnt in both chats is kept once."""
    people = PersonMemory(db, lambda: PersonsConfig(use_llm=False))
    people.attach(memory)
    await memory.record_many(
        [
            _message("a", 1, "hi", sender_card="小红"),
            _message("a", 2, "hey", sender="u2", sender_card="阿明"),
            _message("a", 3, "again", sender_card="小红"),
        ]
    )
    await memory.record_many(
        [
            _message("b", 1, "hello", sender_card="小红"),
            _message("b", 2, "yo", sender="u3", sender_card="阿明"),
        ]
    )
    await memory.record(_message("c", 1, "bystander", sender_card="小红"))
    a, b, c = [await _chat_id(memory, k) for k in ("a", "b", "c")]
    async with db.read() as session:
        xiaohong = (await session.scalars(select(Message.person_id).where(Message.chat_id == a))).first()
    assert xiaohong is not None
    for chat in (a, b):
        await people.admin.set_fact(chat, xiaohong, "city", "杭州", now=T0 + timedelta(hours=chat))
    await people.admin.set_fact(a, xiaohong, "job", "设计", now=T0)
    before_c = await _rows_of(db, c)
    async with db.read() as session:
        versions = {v.chat_id: v.version for v in (await session.scalars(select(PersonAliasVersion))).all()}

    report = await merge_chats(db, a, b, now=NOW)

    async with db.read() as session:
        members = {
            m.person_id: m
            for m in (await session.scalars(select(ChatMember).where(ChatMember.chat_id == b))).all()
        }
        assert members[xiaohong].message_count == 3
        assert members[xiaohong].first_seen == (T0 + timedelta(minutes=1)).timestamp()
        assert members[xiaohong].last_seen == (T0 + timedelta(minutes=3)).timestamp()
        aliases = (
            await session.scalars(
                select(PersonAlias).where(PersonAlias.chat_id == b, PersonAlias.person_id == xiaohong)
            )
        ).all()
        cards = [a_ for a_ in aliases if a_.alias == "小红" and a_.source == "card"]
        assert len(cards) == 1
        names = {
            n.person_id: n.person_name
            for n in (await session.scalars(select(PersonChatName).where(PersonChatName.chat_id == b))).all()
        }
        facts = (
            await session.scalars(
                select(PersonFact).where(PersonFact.person_id == xiaohong, PersonFact.superseded_at.is_(None))
            )
        ).all()
        after = {v.chat_id: v.version for v in (await session.scalars(select(PersonAliasVersion))).all()}
    assert names[xiaohong] == "小红"
    assert len(members) == 3 and report.members == 2
    # 阿明 of chat a (u2) cannot take the name 阿明, which u3 holds in chat b: dropped, not doubled.
    assert sorted(names.values()).count("阿明") == 1 and report.names_dropped >= 1
    assert sorted((f.chat_id, f.key, f.value) for f in facts) == [(b, "city", "杭州"), (b, "job", "设计")]
    assert after[a] > versions.get(a, 0) and after[b] > versions.get(b, 0)
    assert after.get(c) == versions.get(c)
    assert await _rows_of(db, c) == before_c


async def test_an_admins_removal_of_a_fact_in_either_chat_holds_after_a_merge(
    memory: MemoryService, db: Database
) -> None:
    """Both chats had a fact removed by an admin (`people edit --remove-fact`): a message of FROM from
    before its edit, read in INTO after the merge, does not bring the value back; one said later does."""
    people = PersonMemory(db, lambda: PersonsConfig(use_llm=False))
    people.attach(memory)
    await memory.record(_message("b", 1, "我住在上海", sender_card="小红"))
    await memory.record(_message("a", 2, "我喜欢猫", sender_card="小红"))
    await people.consolidator.run(T0)
    await memory.record(_message("a", 3, "我也喜欢猫啊", sender_card="小红"))  # not read before the edit
    a, b = await _chat_id(memory, "a"), await _chat_id(memory, "b")
    async with db.read() as session:
        xiaohong = (await session.scalars(select(Message.person_id).where(Message.chat_id == a))).first()
    assert xiaohong is not None
    await people.admin.remove_fact(a, xiaohong, "likes", now=T0 + timedelta(minutes=10))
    await people.admin.remove_fact(b, xiaohong, "location", now=T0 + timedelta(minutes=10))

    await merge_chats(db, a, b, now=NOW)
    await people.consolidator.run(T0)

    async def facts() -> list[tuple[str, str]]:
        record = await people.record(b, xiaohong)
        assert record is not None
        return sorted((f.key, f.value) for f in record.facts)

    assert await facts() == [], "neither removed value is learnt back"
    await memory.record(_message("b", 20, "我现在喜欢猫", sender_card="小红"))
    await people.consolidator.run(T0)
    assert await facts() == [("likes", "猫")], "said after the edit"


async def test_jargon_of_both_chats_folds(memory: MemoryService, db: Database) -> None:
    await memory.record_many([_message("a", n, f"yyds {n}") for n in range(1, 4)])
    await memory.record_many([_message("b", n, f"yyds {n}") for n in range(1, 3)])
    await memory.record_many([_message("c", n, f"yyds {n}") for n in range(1, 3)])
    a, b, c = [await _chat_id(memory, k) for k in ("a", "b", "c")]

    async def ids(chat: int) -> list[int]:
        async with db.read() as session:
            return list((await session.scalars(select(Message.id).where(Message.chat_id == chat))).all())

    own_a = await mine(memory, a, "yyds", await ids(a), scope="chat")
    own_b = await mine(memory, b, "yyds", await ids(b), scope="chat")
    only_a = await mine(memory, a, "绝绝子", (await ids(a))[:2], scope="chat")
    shared = await mine(memory, a, "破防", (await ids(a))[:1])
    await mine(memory, b, "破防", (await ids(b))[:1])
    await mine(memory, c, "破防", (await ids(c))[:1])
    async with db.write() as session:
        await dictionary.decide(session, [own_a], "approve", "admin", NOW, meaning="永远的神")
    before_c = await _rows_of(db, c)

    report = await merge_chats(db, a, b, now=NOW)

    assert (report.jargon_moved, report.jargon_folded) == (1, 1)
    async with db.read() as session:
        entries = {j.content: j for j in (await session.scalars(select(Jargon))).all()}
        counts = {
            (k.jargon_id, k.chat_id): k.count for k in (await session.scalars(select(JargonChatCount))).all()
        }
        evidence = (await session.scalars(select(JargonEvidence).where(JargonEvidence.chat_id == b))).all()
        trail = await dictionary.reviews(session, own_a)
    yyds = entries["yyds"]
    assert yyds.id == own_a and yyds.chat_id == b, "the approved entry is kept"
    assert (yyds.count, yyds.meaning, yyds.status) == (5, "永远的神", "approved")
    assert await _exists(db, Jargon, own_b) is False
    assert counts[(own_a, b)] == 5 and (own_a, a) not in counts
    assert entries["绝绝子"].id == only_a and entries["绝绝子"].chat_id == b
    assert counts[(shared, b)] == 2 and counts[(shared, c)] == 1
    assert len([e for e in evidence if e.jargon_id == own_a]) == 5
    assert trail[-1]["action"] == "merge"
    assert await _rows_of(db, c) == before_c


async def _exists(db: Database, model: type[Base], key: object) -> bool:
    async with db.read() as session:
        return await session.get(model, key) is not None


async def test_each_message_is_checked_into_topics_exactly_once_after_a_merge(
    memory: MemoryService, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old group was checked up to its last message; the supergroup's first messages, recorded
    before the merge, and one after it are read by the check once each, and no old message again."""
    check = TopicCheck(db, TopicCheckSettings(batch_size=3, min_messages=1, max_batches_per_run=20))
    read: list[int] = []
    after_cursor = source.after_cursor

    async def reading(session: Any, chat_id: int, cursor: int, limit: int) -> list[source.SourceMessage]:
        batch = await after_cursor(session, chat_id, cursor, limit)
        read.extend(m.id for m in batch)
        return batch

    monkeypatch.setattr(source, "after_cursor", reading)
    await memory.record_many(
        [_message("old", n, f"爬山 计划 第{n}条", sender=f"u{n % 2}") for n in range(1, 8)]
    )
    old = await _chat_id(memory, "old")
    await check.run_chat(old, T0 + timedelta(hours=1), force=True)
    await memory.record_many([_message("new", n, f"升级后 第{n}条", sender="u1") for n in range(1, 3)])
    new = await _chat_id(memory, "new")
    async with db.read() as session:
        old_state = await session.get(JobState, (TOPIC_CHECK, old))
        assert old_state is not None
        old_threads = {key for pair in old_state.data["disentangler"]["threads"] for key in pair}

    report = await merge_chats(db, old, new, now=NOW)

    assert [(c.job, c.passed_over) for c in report.cursors] == [(TOPIC_CHECK, 0)]
    async with db.read() as session:
        state = await session.get(JobState, (TOPIC_CHECK, new))
        assert state is not None and await session.get(JobState, (TOPIC_CHECK, old)) is None
        threads = {key for pair in state.data["disentangler"]["threads"] for key in pair}
        cached = (await session.scalars(select(TopicCacheEntry))).all()
    assert threads == {f"old/{key}" for key in old_threads}, "a new message 1 is not the old group's 1"
    assert all(key.startswith("old/") for entry in cached for key in entry.thread_keys)
    await memory.record(_message("new", 3, "升级后 第3条"))
    await check.run_chat(new, T0 + timedelta(hours=2), force=True)
    await check.run_chat(new, T0 + timedelta(hours=2), force=True)
    async with db.read() as session:
        ids = list((await session.scalars(select(Message.id).where(Message.chat_id == new))).all())
        cached = (await session.scalars(select(TopicCacheEntry))).all()
    assert sorted(read) == sorted(ids), "every message of both chats read once, none twice"
    assert sorted(i for entry in cached for i in entry.message_ids) == sorted(ids)


async def test_cursors_that_cannot_be_combined_pass_over_rather_than_read_twice(
    memory: MemoryService, db: Database
) -> None:
    check = TopicCheck(db, TopicCheckSettings(batch_size=2, min_messages=1, max_batches_per_run=1))
    await memory.record_many([_message("a", n, f"a {n}") for n in range(1, 5)])
    await memory.record_many([_message("b", n, f"b {n}") for n in range(1, 3)])
    a, b = await _chat_id(memory, "a"), await _chat_id(memory, "b")
    await check.run_chat(a, T0 + timedelta(hours=1), force=True)  # a's first two of four
    await check.run_chat(b, T0 + timedelta(hours=1), force=True)  # both of b's, after all of a's
    report = await merge_chats(db, a, b, now=NOW)
    assert [(c.job, c.passed_over) for c in report.cursors] == [(TOPIC_CHECK, 2)]
    assert "2 waiting messages passed over" in report.summary()


async def test_notes_move_and_a_clashing_name_keeps_both(
    memory: MemoryService, db: Database, tmp_path: Path
) -> None:
    notes = NoteScopes(tmp_path / "notes")
    await memory.record(_message("a", 1, "hi"))
    await memory.record(_message("b", 1, "hi"))
    await memory.record(_message("c", 1, "hi"))
    a, b = await _chat_id(memory, "a"), await _chat_id(memory, "b")
    await notes.for_chat("test:a").set("plan", "old group's plan")
    await notes.for_chat("test:a").set("index", "see [[plan]] and [[gear]]")
    await notes.for_chat("test:a").set("gear", "boots")
    await notes.for_chat("test:b").set("plan", "supergroup plan")
    await notes.for_chat("test:c").set("plan", "another group's plan")

    dry = await merge_chats(db, a, b, now=NOW, notes=notes, dry_run=True)
    assert ("plan", "plan (from test:a)") in dry.notes
    assert await notes.for_chat("test:a").list() == ["gear", "index", "plan"]

    report = await merge_chats(db, a, b, now=NOW, notes=notes)

    into = notes.for_chat("test:b")
    assert await into.list() == ["gear", "index", "plan", "plan (from test:a)"]
    assert await into.get("plan") == "supergroup plan"
    assert await into.get("plan (from test:a)") == "old group's plan"
    assert await into.get("index") == "see [[plan (from test:a)]] and [[gear]]"
    assert sorted(report.notes) == [("gear", "gear"), ("index", "index"), ("plan", "plan (from test:a)")]
    assert notes.for_chat("test:a") is into, "the merged chat's notes are the chat's it went into"
    assert not list(notes.base_dir.glob("chats/test_a-*/*.md"))
    assert await notes.for_chat("test:c").get("plan") == "another group's plan"


@pytest.mark.parametrize("by_the_bot", [True, False], ids=["merged by the bot", "by another process"])
async def test_notes_handed_out_for_the_merged_chat_follow_its_notes(
    memory: MemoryService, db: Database, tmp_path: Path, by_the_bot: bool
) -> None:
    """The notes of a chat handed out before the merge (a reply's tools, `qunyi mcp --chat FROM`)
    stayed on FROM's old folder: they showed none of the folded notes, and a note written there made
    the folder again, where nothing ever read it. They now follow the notes into INTO's folder."""
    bot = NoteScopes(tmp_path / "notes")
    merger = bot if by_the_bot else NoteScopes(tmp_path / "notes")
    await memory.record(_message("a", 1, "hi"))
    await memory.record(_message("b", 1, "hi"))
    a, b = await _chat_id(memory, "a"), await _chat_id(memory, "b")
    handed = bot.for_chat("test:a")
    await handed.set("plan", "old group's plan")
    await bot.for_chat("test:b").set("plan", "supergroup plan")
    await merge_chats(db, a, b, now=NOW, notes=merger)
    await handed.set("gear", "boots")
    into = bot.for_chat("test:b")
    assert await handed.list() == ["gear", "plan", "plan (from test:a)"]
    assert await into.get("gear") == "boots"
    assert bot.for_chat("test:a") is into
    await memory.record(_message("c", 1, "hi"))
    no_notes_yet = bot.for_chat("test:c")
    await merge_chats(db, await _chat_id(memory, "c"), b, now=NOW, notes=merger)
    await no_notes_yet.set("gear", "a tent too")
    assert await into.get("gear") == "a tent too"
    left = [p.name for p in (tmp_path / "notes").glob("chats/test_[ac]-*/*") if not p.name.startswith(".")]
    assert left == []


async def test_a_clashing_note_of_a_chat_whose_key_cannot_end_a_note_name_is_still_moved(
    memory: MemoryService, db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note moved in under a taken name is named after FROM's key; a key holding `..`, too long or
    not in NFC can end no note name, and the search for a free name looped for ever (after the
    database had committed). The loop is bounded here so that a regression fails instead of hanging."""
    monkeypatch.setattr(
        note_store, "itertools", SimpleNamespace(count=lambda start=0: iter(range(start, start + 50)))
    )
    notes = NoteScopes(tmp_path / "notes")
    keys = ["team..a", "x" * 120, unicodedata.normalize("NFD", "café")]
    await memory.record(_message("b", 1, "hi"))
    b = await _chat_id(memory, "b")
    await notes.for_chat("test:b").set("plan", "supergroup plan")
    for key in keys:
        await memory.record(_message(key, 1, "hi"))
        await notes.for_chat(f"test:{key}").set("plan", f"plan of {key}")
        report = await merge_chats(db, await _chat_id(memory, key), b, now=NOW, notes=notes)
        assert notes.for_chat(f"test:{key}") is notes.for_chat("test:b")
        [(old, new)] = report.notes
        assert old == "plan" and await notes.for_chat("test:b").get(new) == f"plan of {key}"
    names = await notes.for_chat("test:b").list()
    cut = "from test:" + "x" * 30  # labels are cut to 40 characters
    assert names == ["plan", "plan (from test:café)", "plan (from test:team.a)", f"plan ({cut})"]


async def test_a_moved_chat_is_followed_once(memory: MemoryService, db: Database, tmp_path: Path) -> None:
    """The platform tells both chats of the move: the first notice merges (making the new chat when it
    has no message yet), the second finds nothing left to do."""
    notes = NoteScopes(tmp_path / "notes")
    await memory.record_many([_message("-4455", 1, "周六爬山"), _message("-4455", 2, "好")])
    await notes.for_chat("test:-4455").set("plan", "爬山")
    report = await follow_move(db, "test", "-4455", "-1004455", now=NOW, notes=notes)
    assert report is not None and report.messages == 2
    new = await _chat_id(memory, "-1004455")
    assert await notes.for_chat("test:-1004455").get("plan") == "爬山"
    assert [m.text for m in await memory.recent(new, 5)] == ["周六爬山", "好"]
    assert await follow_move(db, "test", "-4455", "-1004455", now=NOW, notes=notes) is None


async def test_a_move_of_a_chat_never_recorded_still_leads_its_import_to_the_new_chat(
    memory: MemoryService, db: Database
) -> None:
    """The bot had recorded nothing in the group when it was upgraded: the move merged nothing and
    left no trace, so an import of the old group's export made the old chat, apart from the new one."""
    assert await follow_move(db, "test", "-4455", "-1004455", now=NOW) is None
    assert await follow_move(db, "test", "-4455", "-1004455", now=NOW) is None, "the second notice"
    await memory.record(_message("-1004455", 1, "升级后第一句"))
    report = await memory.record_many([_message("-4455", 1, "升级前"), _message("-4455", 2, "的话")])
    assert report.created == 2
    assert await memory.chat("test", "-4455") is None
    new = await _chat_id(memory, "-1004455")
    assert [p for p, _, _ in await _stored(db, new)] == ["1", "-4455/1", "-4455/2"]


async def test_a_merged_chat_id_is_never_given_to_a_new_chat(memory: MemoryService, db: Database) -> None:
    """Cursors, alias versions and in-process caches are keyed by chat id outside foreign keys: a new
    chat given the merged one's id would inherit them."""
    await memory.record(_message("a", 1, "hi"))
    await memory.record(_message("b", 1, "hi"))
    a, b = await _chat_id(memory, "a"), await _chat_id(memory, "b")
    await merge_chats(db, b, a, now=NOW)
    await memory.record(_message("c", 1, "hi"))
    assert await _chat_id(memory, "c") > b


async def test_indexes_follow_the_rows_and_only_the_seam_is_embedded_again(
    memory: MemoryService, db: Database
) -> None:
    """Full-text rows are keyed by message id, which a merge keeps; vectors move with their chat. The
    turn windows of the messages where the two chats meet now hold the other chat's turn, so those two
    are indexed again and their vectors dropped (the backfill embeds them again)."""
    await memory.record_many([_message("old", n, f"旧群 话题{n}") for n in range(1, 4)])
    await memory.record_many([_message("new", n, f"新群 苹果{n}") for n in range(4, 6)])
    old, new = await _chat_id(memory, "old"), await _chat_id(memory, "new")
    async with db.write() as session:
        rows = (await session.execute(select(Message.id, Message.chat_id).order_by(Message.id))).all()
        await save_vectors(session, "message", "m", [(i, c) for i, c in rows], [[1.0, 0.0]] * len(rows))
    ids = [i for i, _c in rows]

    report = await merge_chats(db, old, new, now=NOW)

    assert report.windows == 2 and report.vectors == 2
    async with db.read() as session:
        vectors = (await session.execute(select(EmbeddingVector.ref_id, EmbeddingVector.chat_id))).all()
        windows = await indexed_tokens(session, WINDOWS_FTS, ids)
        texts = await indexed_tokens(session, "messages_fts", ids)
    assert sorted(vectors) == [(ids[0], new), (ids[1], new), (ids[4], new)]
    assert "苹果" in windows[ids[2]] and "话题" in windows[ids[3]]
    assert all(texts[i] for i in ids), "every message is still in the full-text index under its id"
    hits = await memory.search([new], "话题")
    assert {h.id for h in hits if h.kind == "message"} >= set(ids[:3])
