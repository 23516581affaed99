"""PersonResolver over the database: 小红/红红/xiaohong, ambiguity, cache invalidation, /who."""

from __future__ import annotations

from bot.commands import answers
from memory.persons.aliases import How
from memory.persons.service import PersonMemory
from memory.service import MemoryService
from tests.conftest import T0


async def test_xiaohong_honghong_and_pinyin_resolve_to_the_same_person(chat, people: PersonMemory) -> None:
    g1 = chat()
    red = await g1.say("u1", "hi", card="小红", nickname="小红不红")
    lily = await g1.say("u2", "hi", card="莉莉-产品", nickname="Lily_Chen")
    wanted = str(red.person_id)
    seen = {}
    for name in ("小红", "红红", "xiaohong", "阿红", "@小红"):
        resolution = await people.resolver.resolve(red.chat_id, name)
        assert resolution.person_id == wanted, name
        assert not resolution.ambiguous
        seen[name] = resolution.matches[0]
    assert seen["小红"].how is How.EXACT and seen["小红"].confidence == 1.0
    assert seen["xiaohong"].how is How.PINYIN and 0.7 < seen["xiaohong"].confidence < 1.0
    assert seen["红红"].how is How.VARIANT and seen["红红"].confidence < seen["xiaohong"].confidence
    found = await people.resolver.mentions(red.chat_id, "红红和莉莉明天去爬山，小红说的")
    assert found == [red.person_id, lily.person_id]


async def test_an_ambiguous_name_is_reported_not_guessed(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    g1 = chat()
    first = await g1.say("u1", "早", card="小红")
    await g1.say("u2", "早", card="晓红")
    resolution = await people.resolver.resolve(first.chat_id, "xiaohong")
    assert resolution.ambiguous and resolution.person_id is None
    assert len(resolution.matches) == 2
    assert await people.resolver.mentions(first.chat_id, "xiaohong 在吗") == []
    answer = await answers.who(memory, first.chat_id, "xiaohong")
    assert answer.data["ambiguous"] is True
    assert {m["name"] for m in answer.data["matches"]} == {"小红", "晓红"}
    assert "好几个人" in answer.text


async def test_the_index_is_rebuilt_when_names_change(chat, people: PersonMemory) -> None:
    g1 = chat()
    said = await g1.say("u1", "hi", card="阿飞")
    assert (await people.resolver.resolve(said.chat_id, "大鹏")).matches == []
    index = await people.resolver.index(said.chat_id)
    assert await people.resolver.index(said.chat_id) is index, "unchanged names reuse the cached index"
    await people.admin.add_alias(said.chat_id, said.person_id, "大鹏", now=T0)
    assert (await people.resolver.resolve(said.chat_id, "大鹏")).person_id == str(said.person_id)
    await g1.say("u1", "以后叫我小飞就行", card="阿飞")
    assert (await people.resolver.resolve(said.chat_id, "小飞")).person_id == str(said.person_id)


async def test_who_answers_from_the_card(chat, people: PersonMemory, memory: MemoryService) -> None:
    g1 = chat()
    said = await g1.say("u1", "我住在杭州西湖区，骑车到公司十五分钟", card="阿红｜前端", nickname="小红不红")
    await people.consolidator.run(T0)
    answer = await answers.who(memory, said.chat_id, "红红")
    assert answer.data["ambiguous"] is False
    assert answer.data["matches"][0]["attributes"] == {"location": "杭州西湖区"}
    assert answer.lines[0].startswith("【阿红】又名：")
    assert "住在 杭州西湖区" in answer.text
    assert (await answers.who(memory, said.chat_id, "路人甲")).text == "我不认识「路人甲」。"


async def test_a_decomposed_name_in_a_message_is_the_same_name(chat, people: PersonMemory) -> None:
    # macOS and some keyboards send "José" as J-o-s-e + U+0301 (NFD); the card says it composed (NFC).
    g1 = chat()
    jose = await g1.say("u1", "hola", card="José")
    said = await g1.say("u2", "Jose\u0301 lives in Madrid", card="Bob")
    assert await people.resolver.mentions(jose.chat_id, "ask Jose\u0301 tomorrow") == [jose.person_id]
    (mention,) = await people.resolver.find(jose.chat_id, "ask Jose\u0301!")
    assert mention.text == "Jose\u0301", "the span covers the combining mark"
    await people.consolidator.run(T0)
    record = await people.record(said.chat_id, jose.person_id)
    assert record is not None and record.view.attributes == {"location": "Madrid"}


async def test_a_name_typed_without_its_accents_is_the_same_person(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    g1 = chat()
    zoe = await g1.say("u1", "hi", card="Zoë")
    jose = await g1.say("u2", "hola", card="José Müller")
    await g1.say("u3", "yo", card="Joe")
    for asked, person in (("Zoe", zoe), ("zoe", zoe), ("Jose Muller", jose), ("ZOË", zoe)):
        answer = await answers.who(memory, zoe.chat_id, asked)
        assert [m["person_id"] for m in answer.data["matches"]] == [person.person_id], asked
        assert answer.data["ambiguous"] is False, asked
    assert await people.resolver.mentions(zoe.chat_id, "Zoe and Jose Muller are late") == [
        zoe.person_id,
        jose.person_id,
    ]
    assert (await answers.who(memory, zoe.chat_id, "Joé")).data["matches"][0]["card"] == "Joe"


async def test_who_finds_a_member_by_an_english_nickname_and_so_do_names_in_a_message(
    chat, people: PersonMemory, memory: MemoryService
) -> None:
    """Found by a QA pass of an English group: "/who Liz" answered "I don't know" beside Elizabeth Park,
    and "Liz said…" did not name her for recall and the reply context's cards."""
    g1 = chat("en1")
    liz = await g1.say("u2", "I'll check the budget numbers", card="Elizabeth Park", nickname="ep")
    await g1.say("u1", "the slides are in the shared drive", card="Sam O'Connor", nickname="saoc")
    answer = await answers.who(memory, liz.chat_id, "Liz")
    assert [m["name"] for m in answer.data["matches"]] == ["Elizabeth Park"]
    assert answer.text.startswith("Elizabeth Park — ")
    assert await people.resolver.mentions(liz.chat_id, "Liz said the budget is tight") == [liz.person_id]
