"""The per-message observer: race-free person upserts, person_name choice and uniqueness, aliases."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from memory.models import Person, PersonAlias, PersonChatName
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.persons.store import TIMELINE_CHARS, card_names
from memory.service import MemoryService
from memory.storage import Database
from memory.types import ChatMessage
from tests.conftest import T0
from tests.memory.persons.people_fixtures import count_rows as _count


def _message(n: int, sender: str = "u1", card: str = "阿红｜前端") -> ChatMessage:
    return ChatMessage(
        platform="test",
        chat_id="g1",
        message_id=f"m{n}",
        sender_id=sender,
        sender_name="小红不红",
        sender_card=card,
        text=f"消息 {n}",
        time=T0 + timedelta(seconds=n),
    )


async def test_concurrent_upserts_make_one_person_one_name_and_unique_aliases(tmp_path: Path) -> None:
    # Two Database objects on one file behave like two processes; each records messages concurrently.
    first = await Database.open(tmp_path / "d")
    second = await Database.open(tmp_path / "d")
    services = []
    for db in (first, second):
        memory = MemoryService(db)
        PersonMemory(db, PersonsConfig).attach(memory)
        services.append(memory)
    try:
        await asyncio.gather(*(services[n % 2].record(_message(n)) for n in range(40)))
        assert await _count(first, Person) == 1
        assert await _count(first, PersonChatName) == 1
        async with first.read() as session:
            person = (await session.scalars(select(Person))).one()
            aliases = (await session.scalars(select(PersonAlias))).all()
        assert person.message_count == 40
        assert person.person_name == "阿红"
        assert sorted((a.alias, a.source) for a in aliases) == [
            ("小红不红", "nickname"),
            ("阿红", "card"),
            ("阿红|前端", "card"),
        ]
        # Each process records a name once, then skips it while it does not change.
        assert all(1 <= a.count <= 2 for a in aliases)
    finally:
        await first.close()
        await second.close()


async def test_person_name_prefers_the_card_then_the_nickname(chat, people: PersonMemory) -> None:
    g1 = chat()
    a = await g1.say("u1", "hi", card="莉莉-产品", nickname="Lily_Chen")
    b = await g1.say("u2", "hi", card="", nickname="Tom Becker")
    c = await g1.say("u3", "hi", card="🌟🌟", nickname="浩子Hao")
    names = {r.person_id: r.name for r in await people.records(a.chat_id)}
    assert names == {a.person_id: "莉莉", b.person_id: "Tom Becker", c.person_id: "浩子Hao"}


async def test_person_name_is_unique_within_a_chat_but_not_across_chats(
    chat, people: PersonMemory, db: Database
) -> None:
    g1, g2 = chat("g1"), chat("g2")
    first = await g1.say("u1", "hi", card="小红")
    second = await g1.say("u2", "hi", card="小红")
    other_chat = await g2.say("u2", "hi", card="小红")
    one = await people.record(first.chat_id, first.person_id)
    two = await people.record(first.chat_id, second.person_id)
    assert one is not None and two is not None
    assert one.name == "小红"
    assert two.name != "小红" and two.name.startswith("小红#")
    elsewhere = await people.record(other_chat.chat_id, other_chat.person_id)
    assert elsewhere is not None and elsewhere.name == "小红"
    with pytest.raises(IntegrityError):
        async with db.write() as session:
            row = await session.get(PersonChatName, (first.chat_id, second.person_id))
            assert row is not None
            row.name_key = "小红"


async def test_self_declared_name_becomes_alias_name_and_timeline(chat, people: PersonMemory) -> None:
    g1 = chat()
    said = await g1.say("u5", '以后叫我老赵就行，"一鸣一鸣"的听着像我妈在喊我', card="赵一鸣")
    record = await people.record(said.chat_id, said.person_id)
    assert record is not None
    assert record.name == "老赵"
    declared = [a for a in record.aliases if a.source == "self"]
    assert [(a.alias, a.message_id) for a in declared] == [("老赵", said.message_id)]
    assert "赵一鸣" in record.view.aliases
    assert [(t.text, t.message_ids) for t in record.timeline] == [("自称「老赵」", [said.message_id])]


async def test_a_name_given_in_passing_is_learnt_and_found_by_who(chat, people: PersonMemory) -> None:
    g1 = chat("en1")
    said = await g1.say("u5", "btw I'm Pri, new here, I do the copywriting", card="Priya Raman")
    await g1.say("u4", "I'm tired, the printer jammed twice", card="Will Turner")
    found = await people.who(said.chat_id, "Pri")
    assert [r.name for r in found.records] == ["Priya Raman"]
    assert (await people.who(said.chat_id, "tired")).records == []


async def test_a_name_declared_before_an_admin_renamed_them_does_not_undo_the_rename(
    chat, people: PersonMemory
) -> None:
    """`qunyi people edit --name` (or the console's rename) was undone by a self-declared name in an
    older message recorded afterwards (an import of the chat's history): "以后叫我大赵" said weeks
    before the admin chose 赵医生 renamed them to 大赵. A name declared after the rename still applies."""
    g1 = chat()
    said = await g1.say("u5", "大家好", card="赵一鸣", minutes=60 * 24 * 30)
    await people.admin.rename(said.chat_id, said.person_id, "赵医生", now=T0 + timedelta(days=31))
    older = await g1.say("u5", "以后叫我大赵就行", card="赵一鸣", minutes=60)
    record = await people.record(said.chat_id, said.person_id)
    assert record is not None and record.name == "赵医生"
    assert ("大赵", "self", older.message_id) in [(a.alias, a.source, a.message_id) for a in record.aliases]
    await g1.say("u5", "以后叫我老赵就行", card="赵一鸣", minutes=60 * 24 * 32)
    record = await people.record(said.chat_id, said.person_id)
    assert record is not None and record.name == "老赵"


async def test_asking_not_to_be_called_a_name_does_not_rename_to_it(chat, people: PersonMemory) -> None:
    g1 = chat()
    said = await g1.say("u5", "别叫我胖子", card="赵一鸣")
    record = await people.record(said.chat_id, said.person_id)
    assert record is not None
    assert record.name == "赵一鸣"
    assert "胖子" not in record.view.aliases and record.timeline == []


async def test_the_name_asked_for_instead_of_a_refused_one_is_learnt(chat, people: PersonMemory) -> None:
    """QA pass 16: "小吴别叫我伟哥😂 叫大伟" taught nothing, and /who 大伟 found nobody."""
    g1 = chat()
    said = await g1.say("u2", "小吴别叫我伟哥😂 叫大伟", card="张伟-后端", nickname="伟哥不是药")
    found = await people.who(said.chat_id, "大伟")
    assert [r.person_id for r in found.records] == [said.person_id]
    assert "伟哥" not in found.records[0].view.aliases


async def test_a_name_given_by_someone_else_goes_to_the_mentioned_person(chat, people: PersonMemory) -> None:
    g1 = chat()
    alice = await g1.say("alice", "大家好", card="Alice")
    said = await g1.say("bob", "@Alice 以后就叫你小A吧", card="Bob", mentions=("alice",))
    record = await people.record(said.chat_id, alice.person_id)
    assert record is not None
    assert [(a.alias, a.source) for a in record.aliases if a.source == "others"] == [("小A", "others")]
    speaker = await people.record(said.chat_id, said.person_id)
    assert speaker is not None and not [a for a in speaker.aliases if a.source == "others"]


async def test_a_card_change_is_dated_on_the_timeline(chat, people: PersonMemory) -> None:
    g1 = chat()
    await g1.say("u3", "早", card="浩子｜运维")
    changed = await g1.say("u3", "我把群名片也改了", card="浩子｜SRE")
    record = await people.record(changed.chat_id, changed.person_id)
    assert record is not None
    assert record.name == "浩子"
    assert [(t.kind, t.message_ids) for t in record.timeline] == [("card", [changed.message_id])]
    assert "SRE" in record.timeline[0].text and "运维" in record.timeline[0].text


async def test_a_card_change_too_long_for_its_line_is_cut_between_whole_graphemes(
    chat, people: PersonMemory
) -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one grapheme of five code points
    line_head = len("群名片改为「")
    # The family straddles the line's 512th character: a code-point cut left 👨‍👩 of it.
    card = "红" * (TIMELINE_CHARS - line_head - 3) + family + "红"
    g1 = chat()
    await g1.say("u3", "早", card="阿红")
    changed = await g1.say("u3", "改名了", card=card)
    record = await people.record(changed.chat_id, changed.person_id)
    assert record is not None
    [line] = [t.text for t in record.timeline]
    assert len(line) <= TIMELINE_CHARS
    assert line == "群名片改为「" + "红" * (TIMELINE_CHARS - line_head - 3) + "…"


def test_card_names_split_name_from_role() -> None:
    assert card_names("阿红｜前端") == ["阿红"]
    assert card_names("Tom（汤姆）") == ["Tom", "汤姆"]
    assert card_names("【管理】小王") == ["小王"]
    assert card_names("赵一鸣") == []


def test_card_names_of_english_cards() -> None:
    # A hyphenated first name is one name; a separating hyphen, as in "孙悦-研二", has spaces or CJK.
    assert card_names("Mary-Jane Watson") == []
    assert card_names("Mary-Jane | dps") == ["Mary-Jane"]
    assert card_names("Sam - design") == ["Sam"]
    assert card_names("孙悦-研二") == ["孙悦"]
    # Pronouns and a status in brackets are no names; a capitalised nickname is.
    assert card_names("Alex (they/them)") == ["Alex"]
    assert card_names("Marcus (in Lisbon)") == ["Marcus"]
    assert card_names("Dave (afk)") == ["Dave"]
    assert card_names("Thomas (Tommy)") == ["Thomas", "Tommy"]


async def test_typographic_apostrophes_read_like_ascii_ones(chat, people: PersonMemory) -> None:
    # Phones type ’ for ' ("I’m", "name’s"): the statements and names must not be lost.
    g1 = chat()
    said = await g1.say("u7", "my name’s Jo", card="Joanna")
    await g1.say("u7", "I’m from Lyon, I’m allergic to peanuts")
    refused = await g1.say("u8", "don’t call me Robbie", card="Robert")
    await people.consolidator.run(T0 + timedelta(days=1))
    record = await people.record(said.chat_id, said.person_id)
    assert record is not None
    assert record.name == "Jo"
    assert record.view.attributes == {"hometown": "Lyon", "allergy": ["peanuts"]}
    other = await people.record(refused.chat_id, refused.person_id)
    assert other is not None and other.name == "Robert" and "Robbie" not in other.view.aliases


async def test_invisible_characters_in_names_do_not_reach_people_or_the_reply_context(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    """A card with a zero-width space looked like another member's name while not matching it, a card
    of nothing but invisible characters replaced a real one, and a declared 叫我阿\u200d明 kept its
    joiner; all of it reached the names, aliases and the reply context as it was."""
    g1 = chat()
    real = await g1.say("u1", "hi", card="小红")
    twin = await g1.say("u2", "hi", card="小\u200b红", nickname="\u202etxet")
    await g1.say("u3", "早", card="浩子")
    blanked = await g1.say("u3", "hi", card="\u200b\u200e")
    declared = await g1.say("u4", "叫我阿\u200d明")
    records = {r.person_id: r for r in await people.records(real.chat_id)}
    assert records[real.person_id].name == "小红"
    assert records[twin.person_id].name.startswith("小红#"), "the same name as 小红's, told apart"
    assert (records[twin.person_id].card, records[twin.person_id].nickname) == ("小红", "txet")
    assert (records[blanked.person_id].name, records[blanked.person_id].card) == ("浩子", "浩子")
    assert records[declared.person_id].name == "阿明"
    shown = [
        text
        for r in records.values()
        for text in (r.name, r.card, r.nickname, *r.view.aliases, *(a.alias for a in r.aliases))
    ]
    assert not [text for text in shown if any(ch in text for ch in "\u200b\u200d\u200e\u202e")]
    context = (await memory.context_for_reply(real.chat_id, None, "hi")).text
    assert "叫我阿\u200d明" in context, "message text stays as it was sent"
    assert context.count("\u200d") == 1 and not any(ch in context for ch in "\u200b\u200e\u202e")


async def test_a_blank_looking_name_neither_replaces_a_card_nor_becomes_a_persons_name(
    chat, people: PersonMemory
) -> None:
    """A card of soft hyphens or a Hangul-filler nickname (U+3164, the usual "invisible name") showed
    as nothing yet replaced the member's real card or became their name."""
    g1 = chat()
    await g1.say("u3", "早", card="浩子")
    blanked = await g1.say("u3", "hi", card="\u00ad\u3164")
    filler = await g1.say("u5", "hi", nickname="\u3164")
    records = {r.person_id: r for r in await people.records(blanked.chat_id)}
    assert (records[blanked.person_id].name, records[blanked.person_id].card) == ("浩子", "浩子")
    shown = records[filler.person_id]
    assert shown.name.strip() and not any(ch in shown.name for ch in "\u3164\u1160"), shown.name
    assert shown.nickname == ""


async def test_a_forward_declares_no_name_for_the_member_forwarding_it(chat, people: PersonMemory) -> None:
    """A forwarded "以后叫我老赵" is someone else's words: it named the member who forwarded it."""
    g1 = chat()
    forwarded = await g1.say("u5", "以后叫我老赵就行", card="赵一鸣", forwarded=True)
    record = await people.record(forwarded.chat_id, forwarded.person_id)
    assert record is not None and record.name == "赵一鸣"
    assert [a.alias for a in record.aliases if a.source == "self"] == []
    own = await g1.say("u5", "以后叫我老赵就行", card="赵一鸣")
    assert (await people.record(own.chat_id, own.person_id)).name == "老赵"  # type: ignore[union-attr]
