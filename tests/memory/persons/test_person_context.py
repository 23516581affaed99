"""Person cards in the reply context: speaker, @-mention, name, pronoun; aliases in the transcript;
CJK-safe cards; chat privacy."""

from __future__ import annotations

from dataclasses import replace

import pytest
import regex

from bot.commands import answers
from memory.ingest import Recorded
from memory.persons import pronouns
from memory.persons.aliases import AliasIndex, Mention
from memory.persons.card import PersonView, render_card
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.recall.pipeline import MAX_QUESTION_CHARS
from memory.service import MemoryService
from tests.conftest import T0


async def _context(memory: MemoryService, said: Recorded) -> str:
    stored = (await memory.recent(said.chat_id, 1))[-1]
    assert stored.id == said.message_id
    return (await memory.context_for_reply(said.chat_id, stored)).text


def _section(text: str, name: str) -> str:
    start = text.find(f'<memory section="{name}"')
    return text[start : text.find("</memory>", start)] if start >= 0 else ""


async def test_cards_of_the_named_the_mentioned_and_the_speaker_come_before_the_transcript(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    g1 = chat()
    await g1.say("u1", "我住在杭州", card="阿红｜前端")
    await g1.say("u4", "I'm allergic to peanuts", card="Tom（汤姆）")
    await g1.say("u5", "我是重庆人", card="赵一鸣")
    await people.consolidator.run(T0)
    said = await g1.say("u2", "@Tom 红红说周末去爬山，你去吗", card="莉莉-产品", mentions=("u4",))
    text = await _context(memory, said)
    cards = _section(text, "persons")
    assert cards.index("【Tom】") < cards.index("【阿红】") < cards.index("【莉莉】")
    assert "过敏 peanuts" in cards and "住在 杭州" in cards
    assert "【赵一鸣】" not in cards, "people not in the conversation get no card"
    assert text.index('section="persons"') < text.index('section="recent"')


async def test_cards_in_an_english_chats_context_are_written_in_english(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    g1 = chat()
    await g1.say("u1", "I live in Berlin, I'm allergic to peanuts", card="Sam Walker")
    await g1.say("u2", "y'all can call me Bobby", card="Robert")
    await people.consolidator.run(T0)
    said = await g1.say("u2", "has Sam Walker ever been to Lisbon?", card="Robert")
    cards = _section(await _context(memory, said), "persons")
    assert "Sam Walker — also: " in cards and "Facts: lives in Berlin; allergic to peanuts" in cards
    assert "Bobby — also: Robert" in cards and "calls themselves “Bobby”" in cards
    assert not regex.search(r"\p{Han}", cards), cards


async def test_a_last_or_first_name_alone_brings_the_card_of_its_member(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    """Found by a QA pass of an English group: a member named by one word of their full name got no card."""
    g1 = chat()
    await g1.say("u1", "I'll put the slides in the shared drive", card="Sam O'Connor")
    await g1.say("u2", "I'll check the budget numbers", card="Elizabeth Park")
    await g1.say("u3", "the mockups are almost done", card="Priya Raman")
    said = await g1.say("u3", "did O'Connor send the slides? Elizabeth wants them", card="Priya Raman")
    cards = _section(await _context(memory, said), "persons")
    assert "\nSam O'Connor — " in cards and "\nElizabeth Park — " in cards
    said = await g1.say("u3", "the Park is closed, elizabeth will check later", card="Priya Raman")
    cards = _section(await _context(memory, said), "persons")
    assert "Elizabeth Park" not in cards and "Sam O'Connor" not in cards


async def test_a_pronoun_brings_the_card_of_the_person_last_discussed(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    g1 = chat()
    await g1.say("u1", "我养了一只猫", card="小红")
    await g1.say("u4", "I live in Berlin", card="Tom")
    await people.consolidator.run(T0)
    await g1.say("u2", "小红昨天请假了", card="莉莉")
    asked = await g1.say("u3", "她最近怎么样", card="浩子")
    cards = _section(await _context(memory, asked), "persons")
    assert "【小红】" in cards and "【Tom】" not in cards
    await g1.say("u2", "Tom was late again", card="莉莉")
    english = await g1.say("u3", "how is he doing?", card="浩子")
    cards = _section(await _context(memory, english), "persons")
    assert "【Tom】" in cards and "【小红】" not in cards


async def test_a_pronoun_does_not_reach_back_past_the_max_age(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    g1 = chat()
    await g1.say("u1", "hi", card="小红", minutes=0)
    await g1.say("u2", "小红昨天请假了", card="莉莉", minutes=1)
    late = await g1.say("u3", "她最近怎么样", card="浩子", minutes=600)
    assert "【小红】" not in _section(await _context(memory, late), "persons")


async def test_the_transcript_uses_the_names_the_bot_uses(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    g1 = chat()
    await g1.say("u5", "以后叫我老赵就行", card="赵一鸣")
    said = await g1.say("u1", "好的老赵", card="阿红｜前端")
    recent = _section(await _context(memory, said), "recent")
    assert "老赵: 以后叫我老赵就行" in recent
    assert "阿红: 好的老赵" in recent and "阿红｜前端:" not in recent


async def test_max_cards_zero_shows_no_card(
    chat, people: PersonMemory, memory: MemoryService, persons_config: PersonsConfig
) -> None:
    g1 = chat()
    await g1.say("u1", "我住在杭州", card="阿红")
    said = await g1.say("u2", "阿红周末去爬山吗", card="莉莉")
    assert "【阿红】" in _section(await _context(memory, said), "persons")
    people.cards.config = lambda: replace(persons_config, max_cards=0)
    again = await g1.say("u2", "阿红在吗", card="莉莉")
    assert 'section="persons"' not in await _context(memory, again)


def test_cards_are_cut_between_whole_characters() -> None:
    view = PersonView(
        "1",
        "悦悦👩‍🎓",
        aliases=["孙悦", "Yue"],
        attributes={"likes": ["火锅🌶️", "徒步🥾", "写论文📝" * 5], "location": "新加坡🇸🇬" * 4},
    )
    for limit in range(8, 80, 3):
        card = render_card(view, limit, max_tokens=limit)
        assert len(card) <= limit
        graphemes = regex.findall(r"\X", card)
        assert "".join(graphemes) == card
        assert all(g in render_card(view, 1000) or g == "…" for g in graphemes)


async def test_what_one_chat_learnt_is_not_shown_in_another(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    g1, g2 = chat("g1"), chat("g2")
    in_g1 = await g1.say("u7", "我还在读研呢", card="Yue｜读研中", nickname="悦悦子")
    in_g2 = await g2.say("u7", "啊我对芒果过敏，我喝别的就行", card="孙悦-研二", nickname="悦悦子")
    await g2.say("u7", "叫我小悦就行", card="孙悦-研二", nickname="悦悦子")
    await people.consolidator.run(T0)
    g2_card = await people.card(in_g2.chat_id, in_g2.person_id)
    g1_card = await people.card(in_g1.chat_id, in_g1.person_id)
    assert g2_card is not None and "芒果" in g2_card and "小悦" in g2_card
    assert g1_card is not None and "芒果" not in g1_card and "小悦" not in g1_card and "孙悦" not in g1_card
    who = await answers.who(memory, in_g1.chat_id, "悦悦")
    assert "芒果" not in who.text and "芒果" not in str(who.data)
    in_g1_index = await people.resolver.resolve(in_g1.chat_id, "小悦")
    assert [m.alias for m in in_g1_index.matches] == ["悦悦子"], "matched by the global nickname only"
    asked = await g1.say("u6", "悦悦是不是对什么过敏", card="小明")
    assert "芒果" not in await _context(memory, asked)


async def test_a_flood_message_is_searched_for_names_only_in_its_head(
    chat, people: PersonMemory, memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flood in the recent window (or being answered) used to be searched for names whole: one of a
    million characters (the most a message holds) held the event loop for over a minute on every
    reply while it was in view."""
    searched: list[int] = []
    find_mentions = AliasIndex.find_mentions
    find_pronouns = pronouns.find_pronouns

    def spy_mentions(self: AliasIndex, text: str, **kwargs: float) -> list[Mention]:
        searched.append(len(text))
        return find_mentions(self, text, **kwargs)

    def spy_pronouns(text: str) -> list[tuple[str, tuple[int, int]]]:
        searched.append(len(text))
        return find_pronouns(text)

    monkeypatch.setattr(AliasIndex, "find_mentions", spy_mentions)
    monkeypatch.setattr(pronouns, "find_pronouns", spy_pronouns)
    g1 = chat()
    await g1.say("u1", "我住在杭州", card="阿红")
    await g1.say("u2", "阿红说" + "刷屏" * 10 * MAX_QUESTION_CHARS, card="莉莉")
    asked = await g1.say("u3", "她住哪", card="浩子")
    cards = _section(await _context(memory, asked), "persons")
    assert "【阿红】" in cards, "a name at the start of the flood still counts"
    flood = await g1.say("u3", "阿红" + "？" * 20 * MAX_QUESTION_CHARS, card="浩子")
    assert "【阿红】" in _section(await _context(memory, flood), "persons")
    assert searched and max(searched) <= MAX_QUESTION_CHARS


async def test_in_a_reply_a_pronoun_means_the_author_of_the_message_replied_to(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    """Found by QA pass 16: "他为什么不参加", sent as a reply to 杰哥's message, brought the card of
    小红, the person last named in the chat, and none of 杰哥's: the reply was not read."""
    g1 = chat()
    await g1.say("u1", "这周五的需求评审我不参加了", card="杰哥", minutes=0)
    await g1.say("u4", "hi", card="小红", minutes=1)
    await g1.say("u2", "小红昨天请假了", card="莉莉", minutes=2)
    asked = await g1.say("u3", "他为什么不参加", card="浩子", minutes=20, reply_to=f"{g1.chat}-m1")
    cards = _section(await _context(memory, asked), "persons")
    assert "【杰哥】" in cards and "【小红】" not in cards
    assert cards.index("【杰哥】") < cards.index("【浩子】"), "the one replied to before the speaker"
