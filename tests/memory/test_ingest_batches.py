"""A batch stores exactly what recording its messages one at a time stores.

The batch path (`memory.ingest`) reads what it needs once per batch and sends a message's routine
writes together with those of the messages after it; these tests record the same varied messages both
ways, into two real databases, and compare every table row for row."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from memory.chat_merge import merge_chats
from memory.clock import ManualClock
from memory.ingest import BatchReport
from memory.models import Person
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.recall.preferences import record_preferences
from memory.service import MemoryService
from memory.storage import Database
from memory.types import ChatMessage, MessageDeletion
from tests.conftest import T0
from tests.tables import all_tables

# The columns compared of a table with one set from the wall clock (by the setup's account merge).
WALL_CLOCK = {"person_accounts": "platform, platform_user_id, person_id"}
CHINA = timezone(timedelta(hours=8))


def say(
    chat: str, n: int, sender: str, words: str, minutes: float | None = None, zone: tzinfo = UTC, **extra: Any
) -> ChatMessage:
    """Message `m{n}` of `chat` by `sender` (nickname `nick-{sender}` unless given), `minutes` after T0
    (`n` by default), its time given in `zone`."""
    fields: dict[str, Any] = {"sender_name": f"nick-{sender}", **extra}
    when = (T0 + timedelta(minutes=n if minutes is None else minutes)).astimezone(zone)
    return ChatMessage("test", chat, f"m{n}", sender, words, when, **fields)


# Messages that teach the observers nothing new, so that the batch path holds their writes back.
CHATTER = [
    say("g1", 30 + n, sender, words, minutes=19 + (n + 1) / 10, sender_name=name)
    for n, (sender, name, words) in enumerate(
        [
            ("u1", "nick-u1", "今天天气不错"),
            ("u2", "二狗", "下班了"),
            ("u1", "nick-u1", "晚上吃什么"),
            ("u2", "二狗", "哈哈哈"),
            ("u1", "nick-u1", "周末见"),
            ("u2", "二狗", "收到"),
        ]
    )
]

FIRST_BATCH = [
    say("g1", 8, "u8", "新来的"),  # the first new person: the setup left a forget request on their id
    say("g1", 9, "u8", "新来的第二条"),  # so this one is erased
    say("g1", 10, "u1", "大家好，周六去爬山吗", sender_card="阿一"),
    say("g1", 11, "u2", "我喜欢吃火锅", sender_name="小二"),
    say("g2", 10, "u3", "以后叫我老三就行", sender_card="三哥"),
    say("g1", 10, "u1", "大家好，周六去爬山吗", sender_card="阿一"),  # redelivered in the batch
    say("g1", 12, "u2", "改个昵称", sender_name="二狗"),  # a new nickname mid-batch
    say("g1", 13, "u2", "名片也换了", sender_name="二狗", sender_card="二狗｜后端"),
    say("g1", 11, "u2", "我喜欢吃火锅和烧烤", sender_name="二狗", edited=True),  # edited in the batch
    say("g1", 40, "u1", "这条在收到之前就被撤回了"),
    say("g1", 14, "u4", "忘记之前说的话", minutes=20),  # before its sender was forgotten: erased
    say("g1", 15, "u4", "忘记之后说的话", minutes=50),
    say("g1", 16, "u5", "我是五号，已经并到一号了"),  # a merged account
    say("g1", 17, "u1", "/recall 火锅"),  # a memory command: kept out of the full-text index
    say("g1", 18, "bot", "好的，我记住了", sender_name="群忆", is_bot=True),
    say("g1", 10, "u3", "同一个编号的另一条"),  # the id is taken by another text: a clash
    say("old", 5, "u3", "老群里的消息", reply_to="m1", mentions=("u1",)),  # chat merged into g2
    say("g2", 11, "u1", "这条时间更早", minutes=9, sender_card="一哥"),  # out of time order
    say("g2", 12, "u1", "名片又改了", sender_card="一哥哥"),
    say("g3", 1, "u6", "新群新人 @u7", mentions=("u7",), zone=CHINA),
    say("g3", 2, "u7", "我一般周末去游泳", reply_to="m1", zone=CHINA),
    say("g3", 3, "u6", "叫我小六吧", sender_card="小六", zone=CHINA),
    say("g1", 19, "u2", "回复一下", sender_name="二狗", reply_to="m11"),
    *CHATTER,
]

SECOND_BATCH = [
    say("g1", 1, "u1", "周日去爬山吗", edited=True),  # edits a message of an earlier batch
    say("g1", 11, "u2", "我还是喜欢吃火锅", sender_name="二狗", edited=True),  # edited again
    say("g1", 12, "u2", "改个昵称", sender_name="二狗"),  # redelivered from an earlier batch
    say("g1", 20, "u2", "又改昵称了", sender_name="二狗子"),
    say("g1", 21, "u4", "又一条忘记之前的话", minutes=25),
    say("g2", 13, "u3", "我是老三", sender_card="三哥"),
    say("g1", 22, "u5", "五号又来了"),
    say("g1", 23, "u5", "五号还在"),
    say("g1", 24, "u2", "又是普通的一条", sender_name="二狗子"),
    say("g1", 25, "u2", "再来一条", sender_name="二狗子"),
]


@dataclass
class Memory:
    memory: MemoryService
    people: PersonMemory


@pytest.fixture
async def memories(tmp_path: Path) -> AsyncIterator[tuple[Memory, Memory]]:
    """Two memories over fresh databases, each set up alike (`_set_up`)."""
    made = []
    for name in ("batch", "single"):
        db = await Database.open(tmp_path / name)
        memory = MemoryService(db, ManualClock(T0))
        people = PersonMemory(db, lambda: PersonsConfig(use_llm=False))
        people.attach(memory)
        memory.ingestor.observers.append(record_preferences)
        made.append(Memory(memory, people))
        await _set_up(memory, people)
    yield made[0], made[1]
    for each in made:
        await each.memory.db.close()


async def _set_up(memory: MemoryService, people: PersonMemory) -> None:
    """History before the batches: a chat merged into another, a sender forgotten with their messages
    (at T0 + 30 min), an account merged into another person, a message deleted before it was seen, and
    a request to be forgotten (with messages, at T0 + 30 min) left on an id no person has."""
    for message in (
        say("g1", 1, "u1", "周六去爬山吗"),
        say("g1", 2, "u4", "我的手机号是139"),
        say("g1", 3, "u5", "五号来了"),
        say("g2", 1, "u3", "二群的第一条"),
        say("old", 1, "u3", "老群的第一条"),
    ):
        await memory.record(message)
    old, g2 = [await memory.chat("test", key) for key in ("old", "g2")]
    assert old is not None and g2 is not None
    await merge_chats(memory.db, old.id, g2.id, now=T0.timestamp())
    u1, u4, u5 = [await _person_id(memory, sender) for sender in ("u1", "u4", "u5")]
    await people.admin.forget(u4, remove_messages=True, now=T0 + timedelta(minutes=30))
    await people.admin.merge(u1, u5)
    await memory.delete(MessageDeletion("test", "g1", "m40"))
    async with memory.db.write() as session:  # on the id the next new person gets (0022: the sequence's)
        await session.execute(
            text(
                "INSERT INTO person_forgotten (person_id, time, removed_messages, messages_removed_until) "
                "VALUES ((SELECT seq + 1 FROM sqlite_sequence WHERE name = 'persons'), :until, 0, :until)"
            ),
            {"until": (T0 + timedelta(minutes=30)).timestamp()},
        )


async def _person_id(memory: MemoryService, sender: str) -> int:
    async with memory.db.read() as session:
        found = await session.scalar(select(Person.id).where(Person.platform_user_id == sender))
    assert found is not None
    return found


async def _tables(memory: MemoryService) -> dict[str, list[tuple[Any, ...]]]:
    return await all_tables(memory.db, WALL_CLOCK)


async def _record_in_batches(
    memory: MemoryService, batches: Sequence[list[ChatMessage]]
) -> list[BatchReport]:
    return [await memory.record_many(batch) for batch in batches]


async def _record_one_by_one(memory: MemoryService, batches: Sequence[list[ChatMessage]]) -> None:
    for batch in batches:
        for message in batch:
            await memory.record_many([message])


async def test_a_batch_stores_what_its_messages_recorded_one_at_a_time_store(
    memories: tuple[Memory, Memory],
) -> None:
    batched, single = memories
    reports = await _record_in_batches(batched.memory, [FIRST_BATCH, SECOND_BATCH])
    await _record_one_by_one(single.memory, [FIRST_BATCH, SECOND_BATCH])

    first, second = reports
    assert (first.duplicates, first.erased, len(first.clashes)) == (1, 3, 1), "the cases are exercised"
    assert (second.duplicates, second.erased) == (1, 1)
    batch_tables, single_tables = await _tables(batched.memory), await _tables(single.memory)
    assert batch_tables.keys() == single_tables.keys()
    for name, rows in single_tables.items():
        assert batch_tables[name] == rows, name
    assert len(batch_tables["person_aliases"]) > 3 and batch_tables["preference_docs"], "observers ran"


async def test_the_batch_keeps_the_latest_nickname_and_keeps_commands_out_of_the_index(
    memories: tuple[Memory, Memory],
) -> None:
    batched, _single = memories
    await _record_in_batches(batched.memory, [FIRST_BATCH, SECOND_BATCH])
    async with batched.memory.db.read() as session:
        nickname = await session.scalar(select(Person.nickname).where(Person.platform_user_id == "u2"))
        hotpot = await session.execute(
            text(
                "SELECT m.platform_message_id, m.text FROM messages_fts f JOIN messages m ON m.id = f.rowid "
                "WHERE messages_fts MATCH :word"
            ),
            {"word": '"火锅"'},
        )
        found = sorted(tuple(row) for row in hotpot)
    assert nickname == "二狗子"
    # Neither the edited message's earlier versions nor the memory command "/recall 火锅".
    assert found == [("m11", "我还是喜欢吃火锅")]
