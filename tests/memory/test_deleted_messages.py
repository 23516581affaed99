"""Messages the platform deleted or edited: forgotten with what was learnt from them, never brought back."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, select

from memory import message_removal
from memory.jargon import dictionary
from memory.models import JobState, Message, Person, PersonFact, PersonTimelineEntry
from memory.models.recall import PreferenceDoc
from memory.persons.service import PersonMemory
from memory.recall.preferences import record_preferences
from memory.service import MemoryService
from memory.storage import Database
from memory.topics.check import TopicCheck
from memory.topics.params import DisentangleParams
from memory.types import MessageDeletion, Segment, SegmentKind
from tests.conftest import T0, make_message
from tests.memory.jargon.jargon_helpers import NOW, mine, record
from tests.memory.persons.people_fixtures import count_rows
from tests.memory.topics.test_check import SMALL


def deletion(n: int, chat: str = "g1") -> MessageDeletion:
    return MessageDeletion("test", chat, f"m{n}")


async def facts(db: Database, person_id: int) -> dict[str, list[tuple[str, bool]]]:
    """key -> [(value, current)] of a person's facts."""
    async with db.read() as session:
        rows = (await session.scalars(select(PersonFact).where(PersonFact.person_id == person_id))).all()
    found: dict[str, list[tuple[str, bool]]] = {}
    for row in sorted(rows, key=lambda r: (r.time, r.id)):
        found.setdefault(row.key, []).append((row.value, row.superseded_at is None))
    return found


async def test_a_deleted_message_goes_with_its_facts_its_index_and_its_quote_in_replies(
    memory: MemoryService, people: PersonMemory, db: Database
) -> None:
    said = await memory.record(make_message(1, text="我住在杭州滨江", sender_card="阿红"))
    quote = Segment(SegmentKind.REPLY, "我住在杭州滨江", "m1")
    reply = await memory.record(
        make_message(
            2,
            sender="u2",
            text="离我好近",
            reply_to="m1",
            segments=(quote, Segment(SegmentKind.TEXT, "离我好近")),
        )
    )
    elsewhere = await memory.record(make_message(1, chat="g2", sender="u3", text="我住在杭州滨江"))
    await people.consolidator.run(T0 + timedelta(hours=1))
    assert "location" in await facts(db, said.person_id)

    assert await memory.delete(deletion(1)) is True
    assert await count_rows(db, Message, id=said.message_id) == 0
    assert await facts(db, said.person_id) == {}
    assert [h.id for h in await memory.search([said.chat_id], "杭州")] == []
    async with db.read() as session:
        kept = await session.get(Message, reply.message_id)
    assert kept is not None and kept.reply_to == "m1"
    assert "杭州" not in str(kept.segments), "the reply no longer quotes the deleted words"
    assert [h.id for h in await memory.search([elsewhere.chat_id], "杭州")] == [elsewhere.message_id]


async def test_a_deleted_message_is_not_recorded_again_by_an_import_or_a_late_delivery(
    memory: MemoryService,
) -> None:
    await memory.record(make_message(1, text="周六去西湖"))
    await memory.delete(deletion(1))
    again = await memory.record(make_message(1, text="周六去西湖"))
    report = await memory.record_many([make_message(1, text="周六去西湖"), make_message(2)])
    assert again.erased and not again.created
    assert (report.created, report.erased) == (1, 1)
    assert [m.text for m in await memory.recent(again.chat_id, 5)] == ["message 2"]
    assert (await memory.record(make_message(1, chat="g2", text="周六去西湖"))).created, "only in its chat"


async def test_a_deletion_before_its_message_arrives_still_keeps_it_out(memory: MemoryService) -> None:
    await memory.record(make_message(1))
    assert await memory.delete(deletion(2)) is False
    assert (await memory.record(make_message(2))).erased


async def test_a_deletion_in_a_chat_never_recorded_keeps_the_message_out_of_a_later_import(
    memory: MemoryService,
) -> None:
    """The bot joins, a member deletes an old message, the admin imports the group's history: the
    deletion used to leave no trace (there was no chat to note it under), so the import brought the
    message back."""
    assert await memory.delete(deletion(1, chat="never-seen")) is False
    report = await memory.record_many(
        [make_message(1, chat="never-seen", text="手机号 13800000000"), make_message(2, chat="never-seen")]
    )
    assert (report.created, report.erased) == (1, 1)
    chat = await memory.chat("test", "never-seen")
    assert chat is not None
    assert [m.text for m in await memory.recent(chat.id, 5)] == ["message 2"]


async def test_deleting_the_message_that_superseded_a_fact_brings_the_older_fact_back(
    memory: MemoryService, people: PersonMemory, db: Database
) -> None:
    first = await memory.record(make_message(1, text="我住在杭州"))
    await memory.record(make_message(2, text="我住在上海"))
    await people.consolidator.run(T0 + timedelta(hours=1))
    assert (await facts(db, first.person_id))["location"] == [("杭州", False), ("上海", True)]
    await memory.delete(deletion(2))
    assert (await facts(db, first.person_id))["location"] == [("杭州", True)]


async def test_a_fact_said_again_stays_on_the_repeat_when_the_first_message_goes(
    memory: MemoryService, people: PersonMemory, db: Database
) -> None:
    first = await memory.record(make_message(1, text="我住在杭州"))
    repeat = await memory.record(make_message(2, text="我住在杭州，没搬"))
    await people.consolidator.run(T0 + timedelta(hours=1))
    await memory.delete(deletion(1))
    async with db.read() as session:
        rows = (
            await session.scalars(select(PersonFact).where(PersonFact.person_id == first.person_id))
        ).all()
    assert [(r.value, r.message_id, r.seen_message_ids) for r in rows] == [("杭州", repeat.message_id, [])]
    assert rows[0].evidence == "我住在杭州，没搬"


async def test_timeline_events_and_preference_documents_go_with_their_message(
    memory: MemoryService, people: PersonMemory, db: Database
) -> None:
    memory.ingestor.observers.append(record_preferences)
    said = await memory.record(make_message(1, text="I usually grab an oat latte before work"))
    async with db.write() as session:
        session.add_all(
            [
                PersonTimelineEntry(
                    person_id=said.person_id,
                    chat_id=said.chat_id,
                    time=0,
                    text="a",
                    message_ids=[said.message_id],
                ),
                PersonTimelineEntry(
                    person_id=said.person_id,
                    chat_id=said.chat_id,
                    time=0,
                    text="b",
                    message_ids=[said.message_id, 999],
                ),
            ]
        )
    assert await count_rows(db, PreferenceDoc, message_id=said.message_id) == 1
    await memory.delete(deletion(1))
    assert await count_rows(db, PreferenceDoc) == 0
    async with db.read() as session:
        left = (await session.scalars(select(PersonTimelineEntry))).all()
    assert [(e.text, e.message_ids) for e in left] == [("b", [999])]
    assert await memory.search([said.chat_id], "latte") == []


async def test_an_edit_replaces_the_message_and_what_was_learnt_from_it(
    memory: MemoryService, people: PersonMemory, db: Database
) -> None:
    first = await memory.record(make_message(1, text="我住在杭州"))
    await people.consolidator.run(T0 + timedelta(hours=1))
    edited = await memory.record(make_message(1, text="我住在苏州", edited=True))
    assert edited.created and edited.message_id > first.message_id, "a new id: the jobs read it afresh"
    assert (await memory.record(make_message(1, text="我住在苏州", edited=True))).created is False
    await people.consolidator.run(T0 + timedelta(hours=2))
    assert await facts(db, first.person_id) == {"location": [("苏州", True)]}
    assert await memory.search([first.chat_id], "杭州") == []
    assert [h.id for h in await memory.search([first.chat_id], "苏州")] == [edited.message_id]
    recent = await memory.recent(first.chat_id, 5)
    assert [(m.text, m.time) for m in recent] == [("我住在苏州", T0 + timedelta(minutes=1))]
    member = await people.record(first.chat_id, first.person_id)
    assert member is not None and member.message_count == 1, "an edit is not a second message"


async def test_a_deleted_message_no_longer_counts_as_its_senders(
    memory: MemoryService, people: PersonMemory, db: Database
) -> None:
    kept = await memory.record(make_message(1, text="周六去爬山"))
    await memory.record(make_message(2, text="带伞"))
    await memory.record(make_message(3, chat="g2", text="带伞"))
    await memory.delete(deletion(2))
    member = await people.record(kept.chat_id, kept.person_id)
    assert member is not None and member.message_count == 1
    async with db.read() as session:
        person = await session.get(Person, kept.person_id)
    assert person is not None and person.message_count == 2, "one in g1 and one in g2"


async def test_an_edit_of_a_deleted_message_does_not_bring_it_back(memory: MemoryService) -> None:
    await memory.record(make_message(1, text="手机号 13800000000"))
    await memory.delete(deletion(1))
    assert (await memory.record(make_message(1, text="手机号 139…", edited=True))).erased
    assert await memory.recent((await memory.chat("test", "g1")).id, 5) == []  # type: ignore[union-attr]


async def test_a_newer_fact_said_again_keeps_the_older_one_retired_when_its_first_message_goes(
    memory: MemoryService, people: PersonMemory, db: Database
) -> None:
    first = await memory.record(make_message(1, text="我住在杭州"))
    await memory.record(make_message(2, text="我住在上海"))
    await memory.record(make_message(3, text="我住在上海，挺好"))
    await people.consolidator.run(T0 + timedelta(hours=1))
    await memory.delete(deletion(2))
    assert (await facts(db, first.person_id))["location"] == [("杭州", False), ("上海", True)]


async def test_a_deleted_message_leaves_no_word_in_the_topic_checks_thread_state(
    memory: MemoryService, db: Database
) -> None:
    texts = ["周六爬山", "去哪座山", "我的手机号13800000000", "香山吧", "好的", "几点出发", "八点", "收到"]
    await memory.record_many([make_message(n, text=t) for n, t in enumerate(texts, 1)])
    check = TopicCheck(db, replace(SMALL, batch_size=8, disentangle=DisentangleParams(max_candidates=2)))
    await check.run_chat(1, T0 + timedelta(hours=1))
    await memory.delete(deletion(3))  # out of the thread window by now: only its word counts are left
    await memory.delete(deletion(7))  # still in the window
    async with db.read() as session:
        state = (await session.scalars(select(JobState).where(JobState.job == "topic_check"))).one()
    words = state.data["disentangler"]["df"]
    assert "13800000000" not in str(state.data) and "手机号" not in words and "八点" not in str(state.data)
    assert state.data["disentangler"]["docs"] == 6 and words["山"] == 1


async def test_a_name_declared_in_a_deleted_message_is_no_longer_the_persons_name(
    memory: MemoryService, people: PersonMemory
) -> None:
    first = await memory.record(make_message(1, text="大家好", sender_card="阿红｜前端"))
    await memory.record(make_message(2, text="以后叫我小胖就行", sender_card="阿红｜前端"))
    assert (await people.record(first.chat_id, first.person_id)).view.name == "小胖"  # type: ignore[union-attr]
    await memory.delete(deletion(2))
    shown = await people.record(first.chat_id, first.person_id)
    assert shown is not None and shown.view.name == "阿红" and "小胖" not in shown.view.aliases
    await memory.record(make_message(3, text="以后叫我小胖就行", sender_card="阿红｜前端"))
    await memory.record(make_message(3, text="以后叫我大壮就行", sender_card="阿红｜前端", edited=True))
    shown = await people.record(first.chat_id, first.person_id)
    assert shown is not None and shown.view.name == "大壮" and "小胖" not in shown.view.aliases


async def test_a_change_on_the_timeline_goes_with_either_of_its_messages(
    memory: MemoryService, people: PersonMemory, db: Database
) -> None:
    for chat in ("g1", "g2"):
        await memory.record(make_message(1, chat=chat, text="我住在杭州"))
        await memory.record(make_message(2, chat=chat, text="我住在上海"))
    await people.consolidator.run(T0 + timedelta(hours=1))
    await memory.delete(deletion(2, chat="g1"))  # the new value's message
    await memory.delete(deletion(1, chat="g2"))  # the old value's message
    async with db.read() as session:
        left = (await session.scalars(select(PersonTimelineEntry))).all()
    assert [(e.kind, e.text) for e in left] == []


async def test_a_meaning_the_model_read_from_a_deleted_message_is_dropped_to_be_inferred_again(
    memory: MemoryService,
) -> None:
    """The model may have repeated what the message said (an address, a name) in the meaning; an
    admin's decision is theirs and stays."""
    texts = ["老地方见 就是张三家楼下", "好", "冲鸭", "绝绝子", "嗯", "老地方 走起", "a", "b", "yyds", "c"]
    ids = await record(memory, 0, texts)
    chat = (await memory.chat("test", "g1")).id  # type: ignore[union-attr]
    place = await mine(memory, chat, "老地方", [ids[0], ids[5]])
    near = await mine(memory, chat, "冲鸭", [ids[2]])  # shown with two messages either side: ids[0] too
    far = await mine(memory, chat, "yyds", [ids[8]])
    approved = await mine(memory, chat, "绝绝子", [ids[3]])
    async with memory.db.write() as session:
        for entry in (place, near, far, approved):
            assert await dictionary.apply_inference(session, entry, 2, 0, f"意思 {entry}", True, NOW)
        await dictionary.decide(session, [approved], "approve", "admin", NOW)

    assert await memory.delete(deletion(0)) is True

    async with memory.db.read() as session:
        entries = {e: await dictionary.get(session, e) for e in (place, near, far, approved)}
        trail = await dictionary.reviews(session, place)
        due = [entry.id for entry, _ in await dictionary.due_for_inference(session, (2, 4, 8))]
    dropped = [e for e, view in entries.items() if view is not None and view.meaning == ""]
    assert sorted(dropped) == sorted([place, near])
    assert entries[place] is not None and entries[place].status == "candidate"
    assert entries[far] is not None and entries[far].meaning == f"意思 {far}"
    assert entries[approved] is not None and entries[approved].status == "approved"
    assert trail[-1]["action"] == "meaning dropped" and trail[-1]["actor"] == "message deletion"
    assert place in due, "inferred again from the evidence left (its count still crosses 2)"


async def test_the_meanings_read_from_many_messages_are_found_in_a_few_statements(
    memory: MemoryService, db: Database
) -> None:
    """A person forgotten with thousands of messages: the messages around each of them are found in one
    pass over the chat. Two queries per message, each reading the chat's index, took minutes (7000 of
    35000 messages: 169 s) inside the forget's write transaction."""
    await memory.record_many(
        make_message(n, sender="heavy" if n % 5 == 0 else f"o{n % 3}", text=f"老地方 {n}" if n < 3 else None)
        for n in range(200)
    )
    chat = (await memory.chat("test", "g1")).id  # type: ignore[union-attr]
    ids = [m.id for m in await memory.recent(chat, 200)]
    place = await mine(memory, chat, "老地方", ids[1:3])  # evidence next to the heavy poster's first message
    far = await mine(memory, chat, "老地方 1", [ids[-2]])  # 8 messages after the heavy poster's last
    async with db.write() as session:
        for entry in (place, far):
            assert await dictionary.apply_inference(session, entry, 2, 0, "张三家楼下", True, NOW)
    heavy = ids[0:195:5]
    statements: list[str] = []
    event.listen(db.writer_engine.sync_engine, "before_cursor_execute", lambda *a: statements.append(a[2]))

    async with db.write() as session:
        assert await dictionary.drop_meanings_read_from(session, heavy, NOW) == 1

    assert len(statements) <= 6, f"{len(statements)} statements for {len(heavy)} messages"
    async with db.read() as session:
        entries = [await dictionary.get(session, e) for e in (place, far)]
    assert [(e.meaning, e.status) for e in entries if e is not None] == [
        ("", "candidate"),
        ("张三家楼下", "inferred"),
    ]


async def test_a_forget_of_more_messages_than_sqlite_binds_at_once_removes_them_all(
    memory: MemoryService, people: PersonMemory, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite refuses a statement with more than 32766 variables, and removing a message binds its id
    and those of its neighbours: a person with some 6500 messages among others' could not be forgotten.
    Here the limit is 150 and a batch 10 messages, so that 40 messages show it."""
    await memory.record_many(
        make_message(n, sender="heavy" if n % 5 == 0 else f"o{n % 3}") for n in range(200)
    )
    async with db.read() as session:
        person = (await session.scalars(select(Person.id).where(Person.platform_user_id == "heavy"))).one()

    def low_limit(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.driver_connection._conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 150)

    await db.writer_engine.dispose()  # the writer's next connection has the low limit
    event.listen(db.writer_engine.sync_engine, "connect", low_limit)
    monkeypatch.setattr(message_removal, "ERASE_BATCH", 10)

    report = await people.admin.forget(person, remove_messages=True, now=T0 + timedelta(days=1))

    assert report.messages_removed == 40
    async with db.read() as session:
        left = (await session.scalars(select(Message.text).order_by(Message.id))).all()
    assert left == [f"message {n}" for n in range(200) if n % 5]
