"""Members leaving and joining chats (memory.membership): a leave ends the membership cross-chat recall
reads, a join or a later message of theirs restores it, and events out of order change nothing."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from memory.chat_merge import merge_chats
from memory.models import Chat, ChatMember
from memory.persons.admin import PersonAdmin
from memory.persons.store import person_ids_for
from memory.recall import ScopePolicy
from memory.service import MemoryService
from memory.types import MembershipChange
from tests.conftest import T0, chat_ids, make_message


def change(chat: str, minutes: float, *, joined: bool = False, user: str = "alice") -> MembershipChange:
    """Member `user` leaving (or joining) test chat `chat`, `minutes` after T0."""
    return MembershipChange("test", (chat,), user, T0 + timedelta(minutes=minutes), joined=joined)


async def person(memory: MemoryService, user: str) -> int:
    async with memory.db.read() as session:
        return (await person_ids_for(session, "test", [user]))[user]


async def left_at(memory: MemoryService, chat: str, user: str = "alice") -> float | None:
    [chat_id] = await chat_ids(memory, chat)
    async with memory.db.read() as session:
        member = await session.get(ChatMember, (chat_id, await person(memory, user)))
    assert member is not None
    return member.left_at


async def alice_in_two_groups(memory: MemoryService) -> tuple[int, int, int]:
    """Alice has written in g1 and g2, Bob in g1; cross-chat recall is open to Alice. (g1, g2, alice)."""
    await memory.record(make_message(1, chat="g2", sender="alice", text="周六去西湖边爬山"))
    await memory.record(make_message(2, chat="g1", sender="bob", text="大家好"))
    await memory.record(make_message(3, chat="g1", sender="alice", text="西湖那次怎么样"))
    memory.recaller.scope = ScopePolicy("chat", per_person_cross_chat=("test:alice",))
    g1, g2 = await chat_ids(memory, "g1", "g2")
    return g1, g2, await person(memory, "alice")


async def test_a_person_reads_across_chats_only_the_chats_they_are_still_in(memory: MemoryService) -> None:
    """A person listed in per_person_cross_chat kept reading, wherever they asked, every chat they had
    ever written in, also one they had left or been removed from."""
    g1, g2, alice = await alice_in_two_groups(memory)
    assert await memory.recaller.chats_for(g1, alice) == (g1, g2)
    assert await memory.change_membership(change("g2", 10)) == 1
    assert await memory.recaller.chats_for(g1, alice) == (g1,), "a chat she left is closed to her"
    assert await memory.change_membership(change("g2", 20, joined=True)) == 1
    assert await memory.recaller.chats_for(g1, alice) == (g1, g2), "and open again once she rejoined"
    await memory.change_membership(change("g2", 30))
    assert await memory.recaller.chats_for(g1, alice) == (g1,)
    await memory.record(make_message(40, chat="g2", sender="alice", text="我又回来了"))
    assert await memory.recaller.chats_for(g1, alice) == (g1, g2), "a message of hers there is a rejoin"


async def test_a_leave_dated_before_the_members_last_message_there_marks_nothing(
    memory: MemoryService,
) -> None:
    """The platform's events come out of order (and an import brings old ones): a leave older than a
    message she wrote later still shows her there."""
    g1, g2, alice = await alice_in_two_groups(memory)
    await memory.record(make_message(5, chat="g2", sender="alice", text="下周还去吗"))
    assert await memory.change_membership(change("g2", 4)) == 0
    assert await left_at(memory, "g2") is None
    assert await memory.recaller.chats_for(g1, alice) == (g1, g2)
    assert await memory.change_membership(change("g2", 5)) == 1, "one dated with her last message counts"
    assert await left_at(memory, "g2") == (T0 + timedelta(minutes=5)).timestamp()


async def test_a_join_or_a_message_older_than_the_leave_does_not_bring_a_member_back(
    memory: MemoryService,
) -> None:
    g1, _g2, alice = await alice_in_two_groups(memory)
    await memory.change_membership(change("g2", 10))
    assert await memory.change_membership(change("g2", 8, joined=True)) == 0, "a join from before it"
    await memory.record(make_message(9, chat="g2", sender="alice", text="导入的旧消息"))  # imported history
    assert await left_at(memory, "g2") == (T0 + timedelta(minutes=10)).timestamp()
    assert await memory.recaller.chats_for(g1, alice) == (g1,)
    await memory.change_membership(change("g2", 12))
    assert await left_at(memory, "g2") == (T0 + timedelta(minutes=12)).timestamp(), "the later leave"
    await memory.change_membership(change("g2", 11))
    assert await left_at(memory, "g2") == (T0 + timedelta(minutes=12)).timestamp()


async def test_a_change_in_a_chat_or_of_a_person_never_seen_makes_nothing(memory: MemoryService) -> None:
    await alice_in_two_groups(memory)
    assert await memory.change_membership(change("g9", 10)) == 0
    assert await memory.change_membership(change("g1", 10, user="carol")) == 0
    assert await memory.change_membership(change("g1", 10, joined=True, user="carol")) == 0
    async with memory.db.read() as session:
        chats = (await session.scalars(select(Chat.platform_chat_id))).all()
        members = (await session.scalars(select(ChatMember.person_id))).all()
    assert sorted(chats) == ["g1", "g2"] and len(members) == 3, "no chat and no member was made"


async def test_a_change_names_every_chat_it_holds_for_and_follows_a_merged_chat(
    memory: MemoryService,
) -> None:
    """A Discord server's member leaves all its channels at once; a chat merged into another (a
    Telegram group upgraded) still answers to its old id."""
    g1, g2, _alice = await alice_in_two_groups(memory)
    await merge_chats(memory.db, g2, g1, now=T0.timestamp())
    both = MembershipChange("test", ("g1", "g2", "g3"), "alice", T0 + timedelta(minutes=10))
    assert await memory.change_membership(both) == 1
    assert await left_at(memory, "g1") is not None
    assert await memory.change_membership(change("g2", 11, joined=True)) == 1, "g2 now leads to g1"
    assert await left_at(memory, "g1") is None


async def test_merged_memberships_are_gone_when_the_later_leave_follows_every_message(
    memory: MemoryService,
) -> None:
    """A chat merged into another folds memberships: the merged one is of someone gone when the later
    of the two departures came after the last message in either chat."""
    await memory.record(make_message(1, chat="old", sender="alice"))
    await memory.record(make_message(2, chat="new", sender="alice"))
    await memory.record(make_message(3, chat="old", sender="bob"))
    await memory.record(make_message(4, chat="new", sender="bob"))
    await memory.record(make_message(6, chat="new", sender="bob"))
    for user in ("alice", "bob"):
        await memory.change_membership(change("old", 5, user=user))
    old, new = await chat_ids(memory, "old", "new")
    await merge_chats(memory.db, old, new, now=T0.timestamp())
    assert await left_at(memory, "new", "alice") == (T0 + timedelta(minutes=5)).timestamp()
    assert await left_at(memory, "new", "bob") is None, "bob wrote in the new chat after leaving the old"


async def test_two_merged_accounts_are_one_membership_gone_only_after_both_last_wrote(
    memory: MemoryService,
) -> None:
    await memory.record(make_message(1, sender="alice"))
    await memory.record(make_message(2, sender="alice2"))
    await memory.change_membership(change("g1", 3, user="alice"))
    admin = PersonAdmin(memory.db)
    await admin.merge(await person(memory, "alice2"), await person(memory, "alice"))
    assert await left_at(memory, "g1", "alice2") == (T0 + timedelta(minutes=3)).timestamp()
    await memory.record(make_message(4, sender="alice"))  # the merged account writes again
    assert await left_at(memory, "g1", "alice2") is None
