"""Admin operations: rename with collision check, merge two persons, forget a person."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from sqlalchemy import select

from memory.embeddings import save_vectors
from memory.history import source
from memory.history.digest import Digest
from memory.history.pack import write_history
from memory.history.view import topic_views
from memory.models import (
    ChatHistory,
    ChatMember,
    JobState,
    Message,
    Person,
    PersonAlias,
    PersonChatName,
    PersonFact,
    PersonTimelineEntry,
    TopicCacheEntry,
)
from memory.models.recall import EmbeddingVector, PreferenceDoc
from memory.persons import store
from memory.persons.admin import PersonAdminError
from memory.persons.service import PersonMemory
from memory.recall.preferences import record_preferences
from memory.service import MemoryService
from memory.storage import Database
from memory.storage.fts import indexed_tokens
from memory.topics import cache
from memory.turn_windows import WINDOWS_FTS
from tests.conftest import T0
from tests.memory.persons.people_fixtures import count_rows as _count
from tests.memory.recall.conftest import add_history

A_YEAR = 365 * 24 * 60  # minutes


async def test_rename_refuses_a_name_taken_in_the_chat(chat, people: PersonMemory) -> None:
    g1 = chat()
    a = await g1.say("u1", "hi", card="阿红")
    b = await g1.say("u2", "hi", card="莉莉")
    with pytest.raises(PersonAdminError, match="already"):
        await people.admin.rename(a.chat_id, b.person_id, "阿 红", now=T0)
    assert await people.admin.rename(a.chat_id, b.person_id, "Lily", now=T0) == "Lily"
    assert (await people.resolver.resolve(a.chat_id, "lily")).person_id == str(b.person_id)


async def test_merge_moves_everything_to_the_survivor(
    chat, people: PersonMemory, db: Database, memory: MemoryService
) -> None:
    g1, g2 = chat("g1"), chat("g2")
    main = await g1.say("u1", "我住在杭州", card="阿红")
    alt = await g1.say("u1-alt", "我喜欢猫", card="小红小号", nickname="红红的小号")
    await g2.say("u1-alt", "叫我阿飞就行", card="阿飞")
    await people.consolidator.run(T0)
    async with db.write() as session:
        topic = await add_history(session, main.chat_id, "猫", "我喜欢猫", T0, T0, [alt.message_id])
        row = await session.get(ChatHistory, topic)
        assert row is not None
        row.participants = [{"person_id": alt.person_id, "user_id": "u1-alt", "name": "小红小号"}]
    await people.admin.merge(main.person_id, alt.person_id)
    assert await _count(db, Person, id=alt.person_id) == 0
    async with db.read() as session:
        row = await session.get(ChatHistory, topic)
        assert row is not None and [p["person_id"] for p in row.participants] == [main.person_id]
    for model in (PersonFact, PersonTimelineEntry, PersonAlias, ChatMember, PersonChatName):
        assert await _count(db, model, person_id=alt.person_id) == 0, model
    assert await _count(db, Message, person_id=main.person_id) == 3
    record = await people.record(main.chat_id, main.person_id)
    assert record is not None
    assert record.name == "阿红" and record.message_count == 2
    assert record.view.attributes == {"location": "杭州", "likes": ["猫"]}
    assert "小红小号" in record.view.aliases and "红红的小号" in record.view.aliases
    assert (await people.resolver.resolve(main.chat_id, "小红小号")).person_id == str(main.person_id)
    in_g2 = await people.record(main.chat_id + 1, main.person_id)
    assert in_g2 is not None and in_g2.name == "阿飞", "membership and name in g2 moved over"
    with pytest.raises(PersonAdminError):
        await people.admin.merge(main.person_id, main.person_id)


async def test_merge_keeps_a_fact_both_accounts_hold_once(chat, people: PersonMemory) -> None:
    g1 = chat()
    main = await g1.say("u1", "我住在杭州", card="阿红")
    alt = await g1.say("u1-alt", "我住在杭州", card="阿红小号")
    likes = await g1.say("u1", "我喜欢猫", card="阿红")
    liked = [(await g1.say("u1-alt", "我喜欢猫", card="阿红小号")).message_id for _ in range(2)]
    moved = await g1.say("u1-alt", "我住在上海", card="阿红小号")
    await people.consolidator.run(T0)
    await people.admin.merge(main.person_id, alt.person_id)
    record = await people.record(main.chat_id, main.person_id)
    assert record is not None
    current = sorted((f.key, f.value, f.message_id, f.seen_message_ids) for f in record.facts)
    assert current == [
        ("likes", "猫", likes.message_id, liked),
        ("location", "上海", moved.message_id, []),
    ], "one fact per value; the other account's messages are its repeats"
    assert {(f.key, f.value) for f in record.superseded} == {("location", "杭州")}
    assert all(f.superseded_by == moved.message_id for f in record.superseded)
    with pytest.raises(PersonAdminError):
        await people.admin.merge(main.person_id, alt.person_id)


async def test_a_merge_outlives_the_merged_accounts_next_message(
    chat, people: PersonMemory, db: Database
) -> None:
    g1 = chat()
    main = await g1.say("u1", "我住在杭州", card="阿红")
    alt = await g1.say("u1-alt", "我喜欢猫", card="阿红小号")
    third = await g1.say("u1-old", "旧号", card="阿红旧号")
    await people.admin.merge(alt.person_id, third.person_id)  # u1-old into u1-alt first
    await people.admin.merge(main.person_id, alt.person_id)
    again = [await g1.say(user, "我又来了", card="阿红小号") for user in ("u1-alt", "u1-old")]
    assert [r.person_id for r in again] == [main.person_id] * 2, "both old accounts now speak as the survivor"
    assert await _count(db, Person) == 1, "no fresh person for a merged account"
    record = await people.record(main.chat_id, main.person_id)
    assert record is not None and record.message_count == 5
    async with db.read() as session:
        assert await store.person_ids_for(session, "test", ["u1-alt", "u1-old", "u1"]) == {
            "u1-alt": main.person_id,
            "u1-old": main.person_id,
            "u1": main.person_id,
        }, "@-mentions of a merged account reach the survivor"


@pytest.mark.parametrize("remove_messages", [False, True])
async def test_forget_deletes_what_was_learnt_and_messages_only_if_asked(
    chat, people: PersonMemory, db: Database, memory: MemoryService, remove_messages: bool
) -> None:
    g1 = chat()
    other = await g1.say("u2", "大家好", card="莉莉")
    said = await g1.say("u1", "我住在杭州，以后叫我阿红就行", card="阿红｜前端", nickname="小红不红")
    await people.consolidator.run(T0)
    assert await _count(db, PersonFact, person_id=said.person_id) == 1
    async with db.write() as session:  # the neighbour's vector was embedded with the forgotten words
        await save_vectors(session, "message", "m", [(other.message_id, other.chat_id)], [[1.0, 0.0]])
    report = await people.admin.forget(
        said.person_id, remove_messages=remove_messages, now=T0 + timedelta(days=1)
    )
    assert report.facts == 1 and report.aliases >= 3 and report.names == 1
    for model in (PersonFact, PersonTimelineEntry, PersonAlias, PersonChatName):
        assert await _count(db, model, person_id=said.person_id) == 0, model
    async with db.read() as session:
        person = await session.get(Person, said.person_id)
        member = await session.get(ChatMember, (said.chat_id, said.person_id))
    assert person is not None and person.person_name is None and person.nickname == ""
    assert member is not None and member.card == ""
    assert (await people.resolver.resolve(said.chat_id, "阿红")).matches == []
    hits = await memory.search([said.chat_id], "杭州")
    if remove_messages:
        assert await _count(db, Message, person_id=said.person_id) == 0
        assert hits == [] and report.messages_removed == 1
        async with db.read() as session:
            windows = await indexed_tokens(session, WINDOWS_FTS, [other.message_id])
        assert windows == {other.message_id: ["大家", "好"]}, "the neighbour's window drops the words"
        assert await _count(db, EmbeddingVector, ref_id=other.message_id) == 0
    else:
        assert hits[0].id == said.message_id  # recall may add the turns around it after
        # Rewinding consolidation must not rebuild the profile from the kept messages.
        async with db.write() as session:
            await session.execute(JobState.__table__.delete())
        await people.consolidator.run(T0)
        assert await _count(db, PersonFact, person_id=said.person_id) == 0
    assert await _count(db, PersonFact, person_id=other.person_id) == 0
    assert (await people.record(other.chat_id, other.person_id)) is not None


async def test_forgetting_with_messages_rewrites_the_topics_still_collecting(
    chat, people: PersonMemory, db: Database, memory: MemoryService
) -> None:
    g1 = chat()
    theirs = [await g1.say("u1", f"我家煤球昨晚把外卖袋子撕了 {n}", card="阿红") for n in range(3)]
    others = [await g1.say("u2", f"周六去九溪爬山 {n}", card="莉莉") for n in range(2)]
    alone = [await g1.say("u1", "煤球 猫粮 宠物医院", card="阿红", minutes=300 + n) for n in range(2)]
    async with db.write() as session:
        both = cache.new_entry(theirs[0].chat_id, "煤球、外卖", T0)
        only = cache.new_entry(theirs[0].chat_id, "煤球、猫粮", T0, "llm")
        session.add_all([both, only])
        await session.flush()
        sources = await source.by_ids(session, [r.message_id for r in [*theirs, *others]])
        cache.add_fragment(both, sources, ["t1"], T0)
        cache.add_fragment(only, await source.by_ids(session, [r.message_id for r in alone]), ["t2"], T0)
        both_id, only_id = both.id, only.id
    assert "煤球" in both.terms
    await people.admin.forget(theirs[0].person_id, remove_messages=True, now=T0 + timedelta(days=1))
    async with db.read() as session:
        kept = await session.get(TopicCacheEntry, both_id)
        assert await session.get(TopicCacheEntry, only_id) is None, "a topic of their words only goes"
        views = await topic_views(session, theirs[0].chat_id)
    assert kept is not None and kept.message_ids == [r.message_id for r in others]
    assert kept.participants == [others[0].person_id]
    assert "煤球" not in kept.title and not {"煤球", "外卖"} & set(kept.terms) and "爬山" in kept.terms
    assert kept.first_time < kept.last_time == others[-1].message.time.timestamp()
    shown = json.dumps([v.to_json() for v in views], ensure_ascii=False)
    assert "煤球" not in shown and "外卖" not in shown, "qunyi topics and the web page show nothing of theirs"


async def test_forgetting_with_messages_rewrites_the_topics_that_quoted_them(
    chat, people: PersonMemory, db: Database, memory: MemoryService
) -> None:
    g1 = chat()
    theirs = await g1.say("u1", "我家煤球昨晚把外卖袋子撕了", card="阿红")
    other = await g1.say("u2", "阿红你那猫成精了，周六爬山吗", card="莉莉")
    alone = await g1.say("u1", "我住在西湖边的小区", card="阿红")
    async with db.write() as session:
        shared = await source.by_ids(session, [theirs.message_id, other.message_id])
        quoted = Digest("煤球、外卖", ["煤球", "外卖"], "阿红: 我家煤球昨晚把外卖袋子撕了", [], "llm")
        both = await write_history(session, theirs.chat_id, shared, quoted, T0)
        only = await write_history(
            session, theirs.chat_id, await source.by_ids(session, [alone.message_id]), quoted, T0
        )
        await save_vectors(session, "history", "m", [(both.id, both.chat_id)], [[1.0, 0.0]])
    await people.admin.forget(theirs.person_id, remove_messages=True, now=T0 + timedelta(days=1))
    async with db.read() as session:
        kept = await session.get(ChatHistory, both.id)
        assert await session.get(ChatHistory, only.id) is None, "a topic of their words only goes"
    assert kept is not None
    body = " ".join([kept.theme, *kept.keywords, kept.summary, *kept.key_points, kept.original_text])
    assert "煤球" not in body and "西湖" not in body and "周六爬山" in kept.original_text
    assert kept.source_message_ids == [other.message_id]
    assert [p["person_id"] for p in kept.participants] == [other.person_id]
    assert await _count(db, EmbeddingVector, kind="history") == 0, "its vector is redone by the backfill"
    assert await memory.search([theirs.chat_id], "煤球") == []
    assert await memory.search([theirs.chat_id], "西湖") == []
    assert [h.id for h in await memory.search([theirs.chat_id], "爬山") if h.kind == "history"] == [both.id]


async def test_forgetting_takes_their_names_off_the_messages_and_topics_kept(
    chat, people: PersonMemory, db: Database, memory: MemoryService
) -> None:
    """Their messages stay as the group's record, but not the names they were sent under: the reply
    context showed the old group card on each of their lines, and a topic packed from them kept it in
    its verbatim text and offline summary, where a search for the card found it."""
    g1 = chat()
    theirs = await g1.say("u1", "周六去西湖边爬山吗", card="阿红｜前端", nickname="小红不红")
    other = await g1.say("u2", "好啊，早上八点断桥见", card="莉莉")
    async with db.write() as session:
        sources = await source.by_ids(session, [theirs.message_id, other.message_id])
        spoken = Digest("爬山", ["爬山"], "阿红｜前端: 周六去西湖边爬山吗（阿红｜前端、莉莉）", [], "offline")
        topic = await write_history(session, theirs.chat_id, sources, spoken, T0)
        await save_vectors(session, "message", "m", [(other.message_id, other.chat_id)], [[1.0, 0.0]])
    await people.admin.forget(theirs.person_id, remove_messages=False, now=T0 + timedelta(days=1))
    assert await _count(db, EmbeddingVector, kind="message") == 0, "windows embedded with the card go"
    # An export imported after the request holds an older message of theirs, names and all.
    old = await g1.say("u1", "西湖边人多吗", card="阿红｜前端", nickname="小红不红", minutes=-60)
    assert old.created
    asked = await g1.say("u2", "周六爬山的事定了吗", card="莉莉")
    context = await memory.context_for_reply(asked.chat_id, (await memory.recent(asked.chat_id, 1))[-1])
    async with db.read() as session:
        rows = (await session.execute(select(Message.sender_name, Message.sender_card))).all()
        kept = await session.get(ChatHistory, topic.id)
    assert kept is not None
    shown = json.dumps(
        [[list(r) for r in rows], kept.original_text, kept.summary, kept.participants], ensure_ascii=False
    )
    assert "西湖边爬山" in context.text and "西湖边人多吗" in context.text, "their words stay"
    for name in ("阿红", "小红不红"):
        assert name not in context.text and name not in shown, name
    assert await memory.search([theirs.chat_id], "阿红") == []


async def test_a_message_after_forgetting_the_newest_messages_is_not_passed_over(
    chat, people: PersonMemory
) -> None:
    """The jobs read new messages by id; a message must never take the id of one deleted."""
    g1 = chat()
    await g1.say("u1", "大家好", card="阿红")
    gone = await g1.say("u2", "我住在北京", card="莉莉")
    await people.consolidator.run(T0)
    await people.admin.forget(gone.person_id, remove_messages=True, now=T0 + timedelta(days=1))
    later = await g1.say("u1", "我住在杭州", card="阿红")
    assert later.message_id > gone.message_id, "a deleted message's id is never handed out again"
    await people.consolidator.run(T0 + timedelta(days=1))
    record = await people.record(later.chat_id, later.person_id)
    assert record is not None and record.view.attributes == {"location": "杭州"}


async def test_a_forgotten_persons_old_card_does_not_come_back_when_they_change_it(
    chat, people: PersonMemory
) -> None:
    g1 = chat()
    said = await g1.say("u1", "大家好", card="阿红｜前端")
    await people.admin.forget(said.person_id, remove_messages=False, now=T0 + timedelta(days=1))
    await g1.say("u1", "我回来了", card="新名字", minutes=60 * 48)
    back = await people.record(said.chat_id, said.person_id)
    assert back is not None and back.timeline == []
    card = await people.card(said.chat_id, said.person_id)
    assert card is not None and "阿红" not in card, "the card they had before was forgotten"
    await g1.say("u1", "再改一次", card="又一个名字", minutes=60 * 49)
    record = await people.record(said.chat_id, said.person_id)
    assert record is not None
    assert [t.text for t in record.timeline] == ["群名片改为「又一个名字」(原「新名字」)"]


async def test_importing_history_from_before_a_forget_learns_nothing_about_them_again(
    chat, people: PersonMemory, db: Database, memory: MemoryService
) -> None:
    memory.ingestor.observers.append(record_preferences)
    g1 = chat()
    said = await g1.say("u1", "大家好", card="阿红｜前端", nickname="小红不红")
    await people.admin.forget(said.person_id, remove_messages=False, now=T0 + timedelta(days=1))
    # An export of the chat imported after the request holds older messages of theirs.
    old = await g1.say("u1", "以后叫我阿红吧，我喜欢猫", card="阿红｜前端", nickname="小红不红", minutes=-60)
    assert old.created and old.person_id == said.person_id
    await people.consolidator.run(T0 + timedelta(days=2))
    for model in (PersonFact, PersonTimelineEntry, PersonAlias, PersonChatName, PreferenceDoc):
        assert await _count(db, model, person_id=said.person_id) == 0, model
    async with db.read() as session:
        person = await session.get(Person, said.person_id)
        member = await session.get(ChatMember, (said.chat_id, said.person_id))
    assert person is not None and person.nickname == "" and member is not None and member.card == ""
    assert (await people.resolver.resolve(said.chat_id, "阿红")).matches == []
    later = await g1.say("u1", "叫我小红吧", card="小红", nickname="小红", minutes=60 * 48)
    record = await people.record(later.chat_id, later.person_id)
    assert record is not None and record.name == "小红", "what they say after the request is learnt"
    assert record.nickname == "小红" and record.card == "小红"


async def test_a_message_recorded_before_a_forget_but_dated_after_it_is_not_learnt_from_again(
    chat, people: PersonMemory, db: Database, memory: MemoryService
) -> None:
    """Whether a message was from before the request was told by its date alone: one recorded before it
    but dated a year later (a sender's wrong clock, an import of a later export) was learnt from again
    by the next consolidation, the forgotten person's facts and name back."""
    memory.ingestor.observers.append(record_preferences)
    g1 = chat()
    said = await g1.say(
        "u1", "以后叫我阿红吧，我住在杭州，我喜欢猫", card="阿红｜前端", nickname="小红不红", minutes=A_YEAR
    )
    await people.admin.forget(said.person_id, remove_messages=False, now=T0 + timedelta(days=1))
    await people.consolidator.run(T0 + timedelta(days=2))
    for model in (PersonFact, PersonTimelineEntry, PersonAlias, PersonChatName, PreferenceDoc):
        assert await _count(db, model, person_id=said.person_id) == 0, model
    assert (await people.resolver.resolve(said.chat_id, "阿红")).matches == []
    # What they say after the request is learnt as before; the card they showed before it is not the
    # one they changed from.
    later = await g1.say("u1", "我住在上海", card="小红", nickname="小红", minutes=A_YEAR + 60)
    await people.consolidator.run(T0 + timedelta(days=2))
    record = await people.record(later.chat_id, later.person_id)
    assert record is not None and record.view.attributes == {"location": "上海"}
    assert record.card == "小红" and record.timeline == []


async def test_a_forget_that_deletes_messages_keeps_out_one_dated_after_it_when_imported_again(
    chat, people: PersonMemory, db: Database
) -> None:
    g1 = chat()
    said = await g1.say("u1", "我住在杭州", card="阿红", minutes=A_YEAR)
    report = await people.admin.forget(said.person_id, remove_messages=True, now=T0 + timedelta(days=1))
    assert report.messages_removed == 1
    g1.n = 0  # the same export imported again
    again = await g1.say("u1", "我住在杭州", card="阿红", minutes=A_YEAR)
    assert not again.created and again.erased, "a message deleted with the request does not come back"
    assert await _count(db, Message) == 0
    after = await g1.say("u1", "我住在上海", card="阿红", minutes=A_YEAR)
    assert after.created, "a message of theirs that was never deleted is recorded"


@pytest.mark.parametrize("dated", [0, A_YEAR], ids=["dated-before", "dated-a-year-after"])
async def test_merging_a_forgotten_account_keeps_the_request_with_the_human_not_the_freed_id(
    chat, people: PersonMemory, db: Database, dated: int
) -> None:
    g1 = chat()
    main = await g1.say("u1", "大家好", card="阿红")
    alt = await g1.say("u1-alt", "我住在杭州", card="阿红小号", minutes=dated or None)
    await people.admin.forget(alt.person_id, remove_messages=False, now=T0 + timedelta(days=1))
    await people.admin.merge(main.person_id, alt.person_id)
    async with db.write() as session:  # consolidation read over again (the cursor rewound)
        await session.execute(JobState.__table__.delete())
    await people.consolidator.run(T0 + timedelta(days=2))
    assert await _count(db, PersonFact) == 0, "their words from before the request stay unlearnt"
    # A newcomer whose older messages are imported: the merged person's id is never handed out again
    # (0022), and the request moved with the human does not reach them either.
    newcomer = await g1.say("u9", "叫我小新，我住在北京", card="小新", minutes=-30)
    assert newcomer.person_id > alt.person_id
    await people.consolidator.run(T0 + timedelta(days=2))
    record = await people.record(newcomer.chat_id, newcomer.person_id)
    assert record is not None and record.name == "小新"
    assert record.view.attributes == {"location": "北京"}, "someone else's request does not apply to them"


async def test_a_refused_rename_says_which_rule_and_shows_the_name_as_typed_cut(
    chat, people: PersonMemory
) -> None:
    """The refusal said "empty, longer than 16 characters, or already another member's name" for all
    three, and showed the name as Python's repr: an emoji family as '👨\\u200d👩…', a long one whole."""
    g1 = chat()
    a = await g1.say("u1", "hi", card="阿红")
    b = await g1.say("u2", "hi", card="莉莉")
    with pytest.raises(PersonAdminError) as taken:
        await people.admin.rename(a.chat_id, b.person_id, "阿 红", now=T0)
    assert str(taken.value) == (
        "cannot rename to “阿 红”: another member of this chat is already called that "
        "(case, width and spacing aside)"
    )
    family = "👨\u200d👩\u200d👧\u200d👦"
    with pytest.raises(PersonAdminError) as no_letter:
        await people.admin.rename(a.chat_id, b.person_id, family * 3, now=T0)
    assert str(no_letter.value).startswith(f"cannot rename to “{family * 3}”: it has no letter or digit")
    with pytest.raises(PersonAdminError) as too_long:
        await people.admin.rename(a.chat_id, b.person_id, "长" * 300, now=T0)
    assert str(too_long.value) == (
        f"cannot rename to “{'长' * 39}…”: it is 300 characters, over the limit of 16 "
        "([persons] person_name_max_chars; a name is never cut)"
    )
    assert await people.admin.rename(a.chat_id, b.person_id, "莉莉" + family, now=T0) == "莉莉"


async def test_an_edit_after_a_forget_of_a_message_recorded_before_it_is_not_learnt_from(
    chat, people: PersonMemory, db: Database, memory: MemoryService
) -> None:
    """An edit is recorded under a new message id, past the request's mark: the edit of a message
    recorded before the request, dated after it (a sender's wrong clock), counted as said after it,
    and the next consolidation learnt the forgotten person's facts and name again from it."""
    memory.ingestor.observers.append(record_preferences)
    g1 = chat()
    said = await g1.say("u1", "今天天气不错", card="阿红｜前端", nickname="小红不红", minutes=A_YEAR)
    await people.admin.forget(said.person_id, remove_messages=False, now=T0 + timedelta(days=1))
    g1.n = 0  # the platform delivers the edit under the message's own id, with its first date
    text = "以后叫我阿红吧，我住在杭州，我喜欢猫"
    edit = await g1.say("u1", text, card="阿红｜前端", nickname="小红不红", minutes=A_YEAR, edited=True)
    assert edit.created and edit.message_id > said.message_id
    await people.consolidator.run(T0 + timedelta(days=2))
    for model in (PersonFact, PersonTimelineEntry, PersonAlias, PersonChatName, PreferenceDoc):
        assert await _count(db, model, person_id=said.person_id) == 0, model
    assert (await people.resolver.resolve(said.chat_id, "阿红")).matches == []
    # A message first recorded after the request is theirs to be learnt from, edited or not.
    later = await g1.say("u1", "我住在上海", card="小红", nickname="小红", minutes=A_YEAR + 60)
    g1.n -= 1
    await g1.say("u1", "我住在苏州", card="小红", nickname="小红", minutes=A_YEAR + 60, edited=True)
    await people.consolidator.run(T0 + timedelta(days=2))
    record = await people.record(later.chat_id, later.person_id)
    assert record is not None and record.view.attributes == {"location": "苏州"}


@pytest.mark.parametrize("dated", [0, A_YEAR], ids=["dated-before", "dated-a-year-after"])
async def test_an_edit_after_a_forget_of_a_message_it_deleted_does_not_bring_the_text_back(
    chat, people: PersonMemory, db: Database, memory: MemoryService, dated: int
) -> None:
    g1 = chat()
    said = await g1.say("u1", "我住在杭州", card="阿红", minutes=dated or None)
    await people.admin.forget(said.person_id, remove_messages=True, now=T0 + timedelta(days=1))
    g1.n = 0
    edit = await g1.say("u1", "我住在杭州滨江", card="阿红", minutes=dated or None, edited=True)
    assert not edit.created and edit.erased
    assert await _count(db, Message) == 0
    assert await memory.search([said.chat_id], "杭州") == []


async def _likes(people: PersonMemory, said) -> list[tuple[str, str]]:
    record = await people.record(said.chat_id, said.person_id)
    assert record is not None
    return sorted((f.value, f.source) for f in record.facts if f.key == "likes")


async def test_a_value_an_admin_took_out_is_not_learnt_back_from_what_was_said_before(
    chat, people: PersonMemory
) -> None:
    """Consolidation reads messages some time after they are recorded: one recorded before an admin
    replaced a person's likes (`--set-fact`) or removed them (`--remove-fact likes`), and not read
    yet, brought the value back. What is said after the edit is learnt as ever; an imported message
    dated before it is from before it."""
    g1 = chat()
    first = await g1.say("u1", "我喜欢猫", card="阿红", minutes=1)
    await people.consolidator.run(T0)
    await g1.say("u1", "我也喜欢猫啊", card="阿红", minutes=2)
    await g1.say("u1", "我喜欢狗", card="阿红", minutes=3)
    await people.admin.set_fact(first.chat_id, first.person_id, "likes", "鱼", now=T0 + timedelta(minutes=10))
    await people.consolidator.run(T0)
    assert await _likes(people, first) == [("鱼", "admin")]
    await g1.say("u1", "我现在喜欢猫", card="阿红", minutes=20)
    await people.consolidator.run(T0)
    assert await _likes(people, first) == [("猫", "self"), ("鱼", "admin")], "said after the edit"
    await g1.say("u1", "我真的喜欢猫", card="阿红", minutes=25)
    await people.admin.remove_fact(first.chat_id, first.person_id, "likes", now=T0 + timedelta(minutes=30))
    await g1.say("u1", "我喜欢猫，也喜欢鸟", card="阿红", minutes=28)  # an import, dated before the edit
    await people.consolidator.run(T0)
    assert await _likes(people, first) == []
    await g1.say("u1", "我喜欢猫", card="阿红", minutes=40)
    await people.consolidator.run(T0)
    assert await _likes(people, first) == [("猫", "self")]


async def test_a_value_removed_alone_is_the_only_one_not_learnt_back(chat, people: PersonMemory) -> None:
    g1 = chat()
    first = await g1.say("u1", "我喜欢猫", card="阿红", minutes=1)
    await people.consolidator.run(T0)
    await g1.say("u1", "我喜欢猫，也喜欢鸟", card="阿红", minutes=2)
    await people.admin.remove_fact(
        first.chat_id, first.person_id, "likes", "猫", now=T0 + timedelta(minutes=5)
    )
    await people.consolidator.run(T0)
    assert await _likes(people, first) == [("鸟", "self")], "only 猫 was taken out"


async def test_add_fact_keeps_the_other_values_and_remove_fact_of_a_value_only_that_one(
    chat, people: PersonMemory
) -> None:
    g1 = chat()
    said = await g1.say("u1", "我喜欢猫", card="阿红")
    await people.consolidator.run(T0)
    admin = people.admin
    assert await admin.add_fact(said.chat_id, said.person_id, "likes", " 狗 ", now=T0)
    assert not await admin.add_fact(said.chat_id, said.person_id, "likes", "猫", now=T0), "held already"
    assert await _likes(people, said) == [("狗", "admin"), ("猫", "self")]
    with pytest.raises(PersonAdminError, match="location holds one value at a time"):
        await admin.add_fact(said.chat_id, said.person_id, "location", "杭州", now=T0)
    with pytest.raises(PersonAdminError, match=r"no fact likes = 鱼 to remove \(its values: 狗, 猫\)"):
        await admin.remove_fact(said.chat_id, said.person_id, "likes", "鱼", now=T0)
    assert await admin.remove_fact(said.chat_id, said.person_id, "likes", "猫", now=T0) == 1
    assert await _likes(people, said) == [("狗", "admin")]


@pytest.mark.parametrize("removed_from", ["merged", "survivor"])
async def test_a_fact_edit_follows_a_person_merge(chat, people: PersonMemory, removed_from: str) -> None:
    """An admin's `--remove-fact` of one account, then a merge of the two accounts: what the merged
    account said before the edit, read after the merge, is not learnt back for the survivor; said
    later, it is."""
    g1 = chat()
    main = await g1.say("u1", "我住在杭州", card="阿红")
    alt = await g1.say("u1-alt", "在的", card="阿红小号")
    edited = alt if removed_from == "merged" else main
    await g1.say("u1-alt" if edited is alt else "u1", "我喜欢猫", card="x", minutes=3)
    await people.consolidator.run(T0)
    assert await _likes(people, edited) == [("猫", "self")]
    await g1.say("u1-alt", "我也喜欢猫啊", card="阿红小号", minutes=5)  # not read before the edit
    await people.admin.remove_fact(edited.chat_id, edited.person_id, "likes", now=T0 + timedelta(minutes=10))
    await people.admin.merge(main.person_id, alt.person_id)
    await people.consolidator.run(T0)
    assert await _likes(people, main) == [], "the removed value stays removed after the merge"
    await g1.say("u1-alt", "我现在喜欢猫", card="阿红小号", minutes=20)
    await people.consolidator.run(T0)
    assert await _likes(people, main) == [("猫", "self")], "said after the edit"


async def test_a_fact_added_by_hand_outlives_a_person_merge_and_consolidation(
    chat, people: PersonMemory
) -> None:
    g1 = chat()
    main = await g1.say("u1", "我喜欢猫", card="阿红")
    alt = await g1.say("u1-alt", "我喜欢鸟", card="阿红小号")
    await people.consolidator.run(T0)
    added = await people.admin.add_fact(
        alt.chat_id, alt.person_id, "likes", "狗", now=T0 + timedelta(minutes=9)
    )
    assert added
    await g1.say("u1-alt", "我喜欢鸟啊", card="阿红小号", minutes=5)
    await people.admin.merge(main.person_id, alt.person_id)
    await people.consolidator.run(T0)
    assert await _likes(people, main) == [("狗", "admin"), ("猫", "self"), ("鸟", "self")]
