"""Names members call someone by when talking to them (memory.persons.addressed), through the observer
on a real database: learnt only from two messages, never one another member goes by."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.chat_merge import merge_chats
from memory.persons.addressed import addressed_names
from memory.persons.service import PersonMemory
from memory.persons.speech import Utterance
from memory.service import MemoryService
from memory.storage import Database

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


async def _aliases(people: PersonMemory, said) -> list[str]:
    record = await people.record(said.chat_id, said.person_id)
    assert record is not None
    return record.view.aliases


async def _resolves_to(people: PersonMemory, said, name: str) -> str | None:
    return (await people.resolver.resolve(said.chat_id, name)).person_id


async def test_a_name_two_members_call_someone_by_becomes_their_alias(chat, people: PersonMemory) -> None:
    g1 = chat()
    dawei = await g1.say("u1", "明天谁去爬山", card="Wang")
    await g1.say("u2", "大伟你明天来吗", card="莉莉", reply_to=f"{g1.chat}-m1")
    assert "大伟" not in await _aliases(people, dawei), "one message is no evidence"
    assert await _resolves_to(people, dawei, "大伟") is None
    await g1.say("u3", "@Wang 大伟，收到", card="浩子", mentions=("u1",))
    assert "大伟" in await _aliases(people, dawei)
    assert await _resolves_to(people, dawei, "大伟") == str(dawei.person_id)
    record = await people.record(dawei.chat_id, dawei.person_id)
    assert record is not None and any("大伟" in line.text for line in record.timeline)


async def test_an_english_name_said_in_thanks_twice_becomes_an_alias(chat, people: PersonMemory) -> None:
    g1 = chat()
    dave = await g1.say("u1", "fixed the build", card="dw_88")
    await g1.say("u2", "thanks Dave!", card="Priya", reply_to=f"{g1.chat}-m1")
    await g1.say("u3", "Dave, can you check the deploy too?", card="Sam O'Connor", mentions=("u1",))
    assert "Dave" in await _aliases(people, dave)


async def test_a_name_said_to_the_wrong_person_once_teaches_nothing(chat, people: PersonMemory) -> None:
    g1 = chat()
    dawei = await g1.say("u1", "在", card="Wang")
    other = await g1.say("u4", "我也在", card="Li")
    await g1.say("u2", "@Li 大伟你明天来吗", card="莉莉", mentions=("u4",))  # the wrong person
    await g1.say("u3", "@Wang 大伟，收到", card="浩子", mentions=("u1",))
    assert "大伟" not in await _aliases(people, dawei), "one message each: neither is learnt"
    assert "大伟" not in await _aliases(people, other)
    await g1.say("u5", "@Wang 大伟你好", card="小周", mentions=("u1",))
    assert "大伟" in await _aliases(people, dawei), "said to them twice, to the other once"
    assert "大伟" not in await _aliases(people, other)


async def test_a_name_another_member_goes_by_is_never_learnt(chat, people: PersonMemory) -> None:
    g1 = chat()
    dawei = await g1.say("u1", "在", card="Wang")
    owner = await g1.say("u9", "我才是", card="大伟")
    for speaker in ("u2", "u3", "u5"):
        await g1.say(speaker, "@Wang 大伟你明天来吗", card=f"c-{speaker}", mentions=("u1",))
    assert "大伟" not in await _aliases(people, dawei)
    assert await _resolves_to(people, dawei, "大伟") == str(owner.person_id)
    for speaker in ("u2", "u3"):  # a variant of another's name (大卫 sounds as 大伟) is theirs too
        await g1.say(speaker, "@Wang 大卫，在吗", card=f"c-{speaker}", mentions=("u1",))
    assert "大卫" not in await _aliases(people, dawei)


async def test_a_name_without_one_person_addressed_or_in_the_same_message_twice_teaches_nothing(
    chat, people: PersonMemory
) -> None:
    g1 = chat()
    dawei = await g1.say("u1", "在", card="Wang")
    await g1.say("u2", "大伟你明天来吗", card="莉莉")  # addressed to no one in particular
    await g1.say("u3", "大伟，收到", card="浩子")
    await g1.say("u2", "@Wang 大伟你好。大伟，在吗", card="莉莉", mentions=("u1",))  # one message
    assert "大伟" not in await _aliases(people, dawei)


async def test_what_was_said_to_either_account_counts_after_a_person_merge(
    chat, people: PersonMemory
) -> None:
    g1 = chat()
    main = await g1.say("u1", "在", card="Wang")
    alt = await g1.say("u1-alt", "我是小号", card="Wang2")
    await g1.say("u2", "@Wang2 大伟你好", card="莉莉", mentions=("u1-alt",))
    await people.admin.merge(main.person_id, alt.person_id)
    await g1.say("u3", "@Wang 大伟，在吗", card="浩子", mentions=("u1",))
    assert "大伟" in await _aliases(people, main), "said to the merged account, then to the survivor"


async def test_what_was_said_in_either_chat_counts_after_a_chat_merge(
    chat, people: PersonMemory, memory: MemoryService, db: Database
) -> None:
    a, b = chat("a"), chat("b")
    dawei = await b.say("u1", "在", card="Wang")
    await b.say("u2", "@Wang 阿飞你好", card="莉莉", mentions=("u1",))  # the chat's own sightings
    await a.say("u1", "在", card="Wang")
    await a.say("u2", "@Wang 大伟你好", card="莉莉", mentions=("u1",))
    source = await memory.chat("test", "a")
    assert source is not None
    await merge_chats(db, source.id, dawei.chat_id, now=T0.timestamp())
    await b.say("u3", "@Wang 大伟，在吗", card="浩子", mentions=("u1",))
    assert "大伟" in await _aliases(people, dawei), "said once in each chat"


async def test_what_was_said_in_two_chats_apart_counts_in_neither(chat, people: PersonMemory) -> None:
    """Sightings are the chat's own until the chats are merged: a name said to someone once in each of
    two chats is no evidence in either (what one chat calls a member is not another chat's business)."""
    a, b = chat("a"), chat("b")
    in_a = await a.say("u1", "在", card="Wang")
    in_b = await b.say("u1", "在", card="Wang")
    await a.say("u2", "@Wang 大伟你好", card="莉莉", mentions=("u1",))
    await b.say("u3", "@Wang 大伟，在吗", card="浩子", mentions=("u1",))
    assert "大伟" not in await _aliases(people, in_a)
    assert "大伟" not in await _aliases(people, in_b)
    assert await _resolves_to(people, in_b, "大伟") is None


def _said(text: str) -> list[str]:
    return [a.alias for a in addressed_names(Utterance("m1", "me", text, T0, mentioned_ids=("p9",)))]


@pytest.mark.parametrize(
    "text",
    [
        "谢谢，收到",  # jieba tags 谢谢 a person's name
        "明白，马上",
        "兄弟你好",
        "老哥你说得对",
        "宝子你好",
        "好吧，我知道了",
        "今天你来吗",
        "thanks guys",
        "Sure, I can do that",
        "Mark, you there?",  # an everyday English word at a sentence start: maybe no name
        "Dave is late",  # about Dave, not to him
        "Thanks Mark For Everything",  # Title Case
    ],
)
def test_words_that_call_anyone_or_no_one_are_no_name(text: str) -> None:
    assert _said(text) == []


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("大伟你明天来吗", "大伟"),
        ("老王，在吗", "老王"),
        ("@小号 阿飞你好", "阿飞"),
        ("thanks Mark", "Mark"),
        ("Thanks Mark!", "Mark"),
        ("hey Priya, welcome", "Priya"),
    ],
)
def test_a_name_calling_the_addressee_is_read(text: str, name: str) -> None:
    assert _said(text) == [name]
