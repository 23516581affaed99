"""A chat's members by nickname, which the web playground reads for every post: kept per chat, read
again whenever they may have changed, in this process or another one (`qunyi people`, `qunyi chats
merge`), and never read twice while nothing changed. Against a real database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.chat_merge import merge_chats
from memory.clock import ManualClock
from memory.persons.service import PersonMemory
from memory.service import MemoryService
from memory.storage import Database
from memory.types import ChatKind, MessageDeletion
from tests.conftest import T0, chat_ids, make_message
from tests.query_plans import planned

ROOM = ("test", "room")


def member_reads(plans: list[tuple[str, object]]) -> int:
    """How many statements read a chat's members (`memory.directory.members`)."""
    return sum("chat_members" in sql and "person_chat_names" in sql for sql, _ in plans)


async def say(
    memory: MemoryService, n: int, sender: str, name: str, chat: str = "room", **extra: object
) -> int:
    """Message `n` of `sender` under nickname `name`; the sender's person id."""
    return (
        await memory.record(make_message(n, chat=chat, sender=sender, sender_name=name, **extra))
    ).person_id


@pytest.fixture
async def other(tmp_path: Path) -> AsyncIterator[Database]:
    """The same database opened again: another process (`qunyi people …`, `qunyi chats merge`)."""
    database = await Database.open(tmp_path / "data")
    yield database
    await database.close()


async def test_the_nicknames_are_read_once_while_nothing_changes(memory: MemoryService) -> None:
    """Every post walked every member of the chat (about 0.1 s at 3,000 of them) to find the same names."""
    await memory.record_many(
        make_message(n, chat="room", sender=f"u{n}", sender_name=f"成员{n}") for n in range(40)
    )
    expected = {f"成员{n}": f"u{n}" for n in range(40)}
    with planned(memory.db) as plans:
        first = await memory.chat_nicknames(*ROOM)
        first["someone"] = "u999"  # the caller's copy
        await say(memory, 50, "u3", "成员3")  # a member under the name kept
        await memory.record(make_message(51, chat="room", sender="bot", sender_name="群忆", is_bot=True))
        calls = [await memory.chat_nicknames(*ROOM) for _ in range(5)]
    assert calls == [expected] * 5
    assert member_reads(plans) == 1
    assert await memory.chat_nicknames("test", "no-such-chat") == {}


async def test_what_this_process_records_or_deletes_is_followed(memory: MemoryService) -> None:
    await say(memory, 1, "u1", "阿明")
    await say(memory, 2, "u1", "阿明")
    await say(memory, 3, "u2", "阿明")
    await say(memory, 4, "u3", "小红")
    assert await memory.chat_nicknames(*ROOM) == {"阿明": "u1", "小红": "u3"}
    await say(memory, 5, "u4", "新人")
    assert await memory.chat_nicknames(*ROOM) == {"阿明": "u1", "小红": "u3", "新人": "u4"}, "a new member"
    await say(memory, 6, "u3", "小绿")
    assert await memory.chat_nicknames(*ROOM) == {"阿明": "u1", "小绿": "u3", "新人": "u4"}, "a new nickname"
    for n in (7, 8):  # u2 now the more active 阿明
        await say(memory, n, "u2", "阿明")
    assert (await memory.chat_nicknames(*ROOM))["阿明"] == "u2"
    for n in (7, 8):
        await memory.delete(MessageDeletion("test", "room", f"m{n}", ChatKind.GROUP))
    assert (await memory.chat_nicknames(*ROOM))["阿明"] == "u1", "u2's deleted messages no longer count"


async def test_a_read_begun_before_a_change_keeps_nothing(memory: MemoryService) -> None:
    await say(memory, 1, "u1", "阿明")
    [room] = await chat_ids(memory, "room")
    mark = memory.nicknames.mark()
    await say(memory, 2, "u2", "小红")  # recorded while that read was under way
    async with memory.db.read() as session:
        await memory.nicknames.names(session, ROOM, room, mark)
    with planned(memory.db) as plans:
        assert await memory.chat_nicknames(*ROOM) == {"阿明": "u1", "小红": "u2"}
    assert member_reads(plans) == 1, "read again: nothing was kept from the read begun before the change"


async def test_people_merged_or_forgotten_by_another_process_are_followed(
    memory: MemoryService, other: Database
) -> None:
    main = await say(memory, 1, "u1", "小红")
    alt = await say(memory, 2, "u1-alt", "红红的小号")
    bob = await say(memory, 3, "u2", "阿明")
    assert await memory.chat_nicknames(*ROOM) == {"小红": "u1", "红红的小号": "u1-alt", "阿明": "u2"}
    admin = PersonMemory(other).admin
    await admin.merge(main, alt)
    assert await memory.chat_nicknames(*ROOM) == {"小红": "u1", "阿明": "u2"}
    await admin.forget(bob, remove_messages=False, now=T0)
    assert await memory.chat_nicknames(*ROOM) == {"小红": "u1"}


async def test_chats_merged_by_another_process_are_followed(memory: MemoryService, other: Database) -> None:
    await say(memory, 1, "u1", "小红")
    await say(memory, 2, "u2", "阿明", chat="side")
    await say(memory, 3, "u3", "老王", chat="third")
    room, side, third = await chat_ids(memory, "room", "side", "third")
    assert await memory.chat_nicknames(*ROOM) == {"小红": "u1"}
    assert await memory.chat_nicknames("test", "side") == {"阿明": "u2"}
    await merge_chats(other, side, room, now=T0.timestamp())
    both = {"小红": "u1", "阿明": "u2"}
    assert await memory.chat_nicknames(*ROOM) == both, "a chat merged into this one"
    assert await memory.chat_nicknames("test", "side") == both, "its key leads to the chat it went into"
    await merge_chats(other, room, third, now=T0.timestamp())
    assert await memory.chat_nicknames(*ROOM) == {**both, "老王": "u3"}, "this one merged into another"


async def test_a_nickname_changed_in_another_chat_is_followed(memory: MemoryService) -> None:
    """A nickname is the person's: going back to one they had before, in another chat, moves no name
    version, and the names kept for this chat still showed the one before."""
    await say(memory, 1, "u1", "alice")
    await say(memory, 2, "u2", "bob")
    await say(memory, 3, "u3", "bob")
    assert await memory.chat_nicknames(*ROOM) == {"alice": "u1", "bob": "u2"}
    await say(memory, 4, "u1", "alicia", chat="other")
    assert await memory.chat_nicknames(*ROOM) == {"alicia": "u1", "bob": "u2"}
    await say(memory, 5, "u1", "alice", chat="other")
    assert await memory.chat_nicknames(*ROOM) == {"alice": "u1", "bob": "u2"}
    await say(memory, 6, "u1", "alicia", chat="other")
    assert await memory.chat_nicknames(*ROOM) == {"alicia": "u1", "bob": "u2"}, "a name they had before"
    await say(memory, 7, "u3", "carol", chat="other")  # the member the other bob left out
    assert await memory.chat_nicknames(*ROOM) == {"alicia": "u1", "bob": "u2", "carol": "u3"}
    with planned(memory.db) as plans:
        await say(memory, 8, "u1", "alicia", chat="other")
        await memory.record(
            make_message(9, chat="other", sender="u1", sender_name="别的平台的人", platform="elsewhere")
        )
        assert await memory.chat_nicknames(*ROOM) == {"alicia": "u1", "bob": "u2", "carol": "u3"}
    assert member_reads(plans) == 0, "the same nickname, or another platform's member, changes nothing"


async def test_a_nickname_another_process_changes_back_is_followed(
    memory: MemoryService, other: Database, clock: ManualClock
) -> None:
    """Another process (`qunyi import`, a second bot) records a member going back to a nickname they had
    before: no new name, so no name version moved, and the names kept here still showed the newer one."""
    elsewhere = MemoryService(other, clock)
    await say(memory, 1, "u1", "alice")
    await say(memory, 2, "u2", "bob")
    await say(elsewhere, 3, "u1", "alicia")
    assert await memory.chat_nicknames(*ROOM) == {"alicia": "u1", "bob": "u2"}
    await say(elsewhere, 4, "u1", "alice")
    assert await memory.chat_nicknames(*ROOM) == {"alice": "u1", "bob": "u2"}
    await say(elsewhere, 5, "u1", "alicia", chat="side")
    assert await memory.chat_nicknames(*ROOM) == {"alicia": "u1", "bob": "u2"}, "changed in another chat"
    with planned(memory.db) as plans:
        await say(elsewhere, 6, "u1", "alicia")
        await say(elsewhere, 7, "u2", "bob", chat="side")
        assert await memory.chat_nicknames(*ROOM) == {"alicia": "u1", "bob": "u2"}
    assert member_reads(plans) == 0, "messages under the nicknames kept change nothing"


async def test_the_nicknames_of_the_chats_used_last_are_kept(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most `CHATS_HELD` chats are kept, the least recently used dropped first: a chat asked for
    again is kept over one asked for once (before, the one read from the database first went)."""
    monkeypatch.setattr("memory.nicknames.CHATS_HELD", 2)
    for chat in ("a", "b", "c"):
        await say(memory, 1, f"{chat}1", f"成员{chat}", chat=chat)
    await memory.chat_nicknames("test", "a")
    await memory.chat_nicknames("test", "b")
    await memory.chat_nicknames("test", "a")  # used again: "b" is now the least recent
    await memory.chat_nicknames("test", "c")
    with planned(memory.db) as plans:
        assert await memory.chat_nicknames("test", "a") == {"成员a": "a1"}
    assert member_reads(plans) == 0
    with planned(memory.db) as plans:
        assert await memory.chat_nicknames("test", "b") == {"成员b": "b1"}
    assert member_reads(plans) == 1
