import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from memory.models import ChatMember, Message, Person
from memory.service import MemoryService
from memory.types import ChatMessage, InvalidMessage, Segment, SegmentKind
from tests.conftest import T0, make_message


async def count(memory: MemoryService, model: type) -> int:
    async with memory.db.read() as session:
        return int((await session.execute(select(func.count()).select_from(model))).scalar_one())


async def test_redelivery_changes_nothing(memory: MemoryService) -> None:
    first = await memory.record(make_message(1, text="第一条"))
    again = await memory.record(make_message(1, text="第一条 (edited redelivery)"))
    assert first.created and not again.created
    assert again.message_id == first.message_id
    assert await count(memory, Message) == 1
    async with memory.db.read() as session:
        person = (await session.execute(select(Person))).scalar_one()
        text = (await session.execute(select(Message.text))).scalar_one()
    assert person.message_count == 1
    assert text == "第一条"


async def test_fifty_concurrent_records_of_a_new_person_make_one_row(memory: MemoryService) -> None:
    results = await asyncio.gather(*(memory.record(make_message(n, sender="newbie")) for n in range(50)))
    assert len({r.person_id for r in results}) == 1
    assert await count(memory, Person) == 1
    async with memory.db.read() as session:
        person = (await session.execute(select(Person))).scalar_one()
        member = (await session.execute(select(ChatMember))).scalar_one()
    assert person.message_count == 50
    assert member.message_count == 50


async def test_batch_path_writes_thousands_and_is_idempotent(memory: MemoryService) -> None:
    batch = [make_message(n, sender=f"u{n % 7}") for n in range(3000)]
    report = await memory.record_many(batch, batch_size=1000)
    assert (report.created, report.duplicates) == (3000, 0)
    again = await memory.record_many(batch)
    assert (again.created, again.duplicates) == (0, 3000)
    assert await count(memory, Message) == 3000
    assert await count(memory, Person) == 7


async def test_segments_mentions_reply_and_time_are_kept(memory: MemoryService) -> None:
    segments = (Segment(SegmentKind.TEXT, "看这个"), Segment(SegmentKind.IMAGE, "[image]", "http://x/1.png"))
    message = make_message(
        1, text="看这个[image]", segments=segments, reply_to="m0", mentions=("u2",), sender_card="卡片"
    )
    await memory.record(message)
    async with memory.db.read() as session:
        row = (await session.execute(select(Message))).scalar_one()
    assert [Segment.from_json(s) for s in row.segments] == list(segments)
    assert row.reply_to == "m0" and row.mentions == ["u2"] and row.sender_card == "卡片"
    assert row.time == T0.timestamp() + 60


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(InvalidMessage, match="chat_id"):
        make_message(1, chat="")
    with pytest.raises(InvalidMessage, match="timezone-aware"):
        make_message(1, time=T0.replace(tzinfo=None))
    with pytest.raises(InvalidMessage, match="over the limit"):
        make_message(1, text="x" * 1_000_001)


async def test_binary_and_huge_text_are_stored_cleanly(memory: MemoryService) -> None:
    binary = "abc\x00\x01\x02def\ud800 中文\n第二行"
    big = "长" * 200_000
    await memory.record(make_message(1, text=binary))
    await memory.record(make_message(2, text=big))
    async with memory.db.read() as session:
        texts = (await session.execute(select(Message.text).order_by(Message.id))).scalars().all()
    assert texts[0] == "abcdef 中文\n第二行"
    assert texts[1] == big
    hits = await memory.search([1], "中文")
    assert hits[0].text == "abcdef 中文\n第二行"


def test_chat_message_display_name_prefers_card() -> None:
    message = ChatMessage("p", "c", "m", "u", "t", T0, sender_name="nick", sender_card="card")
    assert message.display_name == "card"


async def test_an_id_taken_by_another_text_is_reported_as_a_clash(memory: MemoryService) -> None:
    await memory.record(make_message(1, text="周六去爬山"))
    same = await memory.record(make_message(1, text="周六去爬山"))
    other = await memory.record(make_message(1, sender="u2", text="我带火锅底料"))
    assert not same.created and not same.clash
    assert not other.created and other.clash
    report = await memory.record_many([make_message(1, text="周六去爬山"), make_message(1, text="另一条")])
    assert (report.created, report.duplicates, [m.text for m in report.clashes]) == (0, 1, ["另一条"])
    assert await count(memory, Message) == 1


@pytest.mark.parametrize("batched", [False, True])
async def test_an_account_known_before_it_speaks_as_the_bot_becomes_the_bot(
    memory: MemoryService, batched: bool
) -> None:
    """The bot's account first recorded as a member's (an imported log, another client of it) stayed a
    member's after the bot spoke as it, so it could be forgotten or merged into a member."""
    known = [make_message(1, sender="qunyi"), make_message(2, sender="u2")]
    spoke = [make_message(3, sender="qunyi", is_bot=True), make_message(4, sender="u2")]
    for messages in (known, spoke):
        if batched:
            await memory.record_many(messages)
        else:
            for message in messages:
                await memory.record(message)
    async with memory.db.read() as session:
        rows = (await session.execute(select(Person.platform_user_id, Person.is_bot))).all()
    flags = {user: is_bot for user, is_bot in rows}
    assert flags == {"qunyi": True, "u2": False}


async def forwarded_flags(memory: MemoryService) -> dict[str, bool]:
    async with memory.db.read() as session:
        rows = await session.execute(select(Message.platform_message_id, Message.forwarded))
    return {platform_id: forwarded for platform_id, forwarded in rows.all()}


async def test_a_forward_is_stored_as_one_on_the_live_and_the_batch_path(memory: MemoryService) -> None:
    await memory.record(make_message(1, text="我是素食者，住在柏林", forwarded=True))
    await memory.record(make_message(2, text="我是素食者，住在柏林"))
    await memory.record_many([make_message(3, text="I live in Berlin", forwarded=True), make_message(4)])
    assert await forwarded_flags(memory) == {"m1": True, "m2": False, "m3": True, "m4": False}


async def test_an_edited_forward_stays_a_forward(memory: MemoryService) -> None:
    await memory.record(make_message(1, text="转发的原文", forwarded=True))
    # a platform may deliver the edit without the forward's origin: its text is still not the sender's
    edited = await memory.record(make_message(1, text="转发的原文（改）", edited=True))
    assert edited.created and edited.message.forwarded
    await memory.record(make_message(2, text="我自己的话"))
    await memory.record(make_message(2, text="我自己的话（改）", edited=True))
    assert await forwarded_flags(memory) == {"m1": True, "m2": False}


async def _names_of(memory: MemoryService, sender: str) -> tuple[str, str]:
    async with memory.db.read() as session:
        nickname = await session.scalar(select(Person.nickname).where(Person.platform_user_id == sender))
        card = await session.scalar(
            select(ChatMember.card)
            .join(Person, Person.id == ChatMember.person_id)
            .where(Person.platform_user_id == sender)
        )
    return str(nickname), str(card)


async def test_a_message_from_a_wrong_clock_does_not_freeze_a_members_names(memory: MemoryService) -> None:
    """A message dated in the year 8999 made it the member's newest: every later message's nickname and
    card counted as older and was kept out for good. A newer name wins again; without the wrong clock,
    an older message still brings back no old name."""
    far = datetime(8999, 1, 1, tzinfo=UTC)
    await memory.record(make_message(1, sender="u1", sender_name="Old", sender_card="旧名片", time=far))
    await memory.record(make_message(2, sender="u1", sender_name="New", sender_card="新名片"))
    assert await _names_of(memory, "u1") == ("New", "新名片")

    await memory.record(make_message(10, sender="u2", sender_name="Now", sender_card="现在"))
    await memory.record(make_message(3, sender="u2", sender_name="Before", sender_card="以前"))
    assert await _names_of(memory, "u2") == ("Now", "现在"), "an imported older message keeps the newer names"
