"""Several of the bot's QQ accounts in one group: each gets its own event for every message there, and
each message is handed on (so recorded) once."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import time
from typing import Any

from adapters.onebot_v11 import OneBotAdapter
from memory.service import MemoryService
from memory.types import ChatKind, MessageDeletion
from tests.adapters.onebot_v11.peers import WAIT, ConnectPeer, Inbox, Peer, fixture, ok

Reverse = tuple[OneBotAdapter, Inbox, str]
SECOND = "10002"
LAST = itertools.count(900_000)


def said(text: str, message_id: int, **fields: Any) -> dict[str, Any]:
    """A group message of member 20002 as the first account receives it."""
    event = fixture("group_message_array.json") | {"message_id": message_id, **fields}
    event["message"] = [{"type": "text", "data": {"text": text}}]
    return event


def copy(event: dict[str, Any], message_id: int, **fields: Any) -> dict[str, Any]:
    """`event` as the second account receives it: NapCat numbers messages per account."""
    return event | {"self_id": int(SECOND), "message_id": message_id, **fields}


async def handed_on(inbox: Inbox, peer: Peer) -> list[str]:
    """The ids of the messages handed on so far: a last message, sent by `peer` after the others it
    sent, ends the wait for them."""
    last = next(LAST)  # each its own: another account's event for the same words would be a copy
    await peer.send(said(f"最后一条 {last}", last))
    ids = []
    while (message := await inbox.get()).message_id != str(last):
        ids.append(message.message_id)
    return ids


def from_the_bot() -> dict[str, Any]:
    """The fields of a message the first account sent just now (an answer is dated by the local clock)."""
    return {"user_id": 10001, "sender": {"user_id": 10001}, "time": int(time.time())}


async def two_accounts(connect_peer: ConnectPeer) -> tuple[Peer, Peer]:
    return await connect_peer(), await connect_peer(SECOND)


async def test_a_message_both_accounts_receive_is_handed_on_once(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    """The second account's event (its own message_id, as NapCat gives, the same sender, text and time)
    was a second message: every message of the group was recorded twice."""
    _, inbox, _ = reverse
    first, second = await two_accounts(connect_peer)
    await first.send(fixture("group_message_array.json"))
    assert (await inbox.get()).message_id == "-2147400001"
    await second.send(fixture("group_message_second_account.json"))
    assert await handed_on(inbox, second) == []


async def test_the_same_words_sent_twice_are_two_messages(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    """Two messages one account receives are never taken for copies, however alike; with both accounts
    receiving both, each message takes one copy from the other account and two are handed on."""
    _, inbox, _ = reverse
    first, second = await two_accounts(connect_peer)
    await first.send(said("+1", 11))
    await first.send(said("+1", 12))
    assert await handed_on(inbox, first) == ["11", "12"]
    await second.send(copy(said("+1", 11), 511))
    await second.send(copy(said("+1", 12), 512))
    await second.send(copy(said("+1", 13), 513))  # a third one the first account has not seen
    assert await handed_on(inbox, second) == ["513"]


async def test_the_shared_sequence_tells_copies_and_messages_apart(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    """NapCat's `real_seq` is the group's own number of the message, the same for every account: the
    same number is one message whatever else differs, another number another message."""
    _, inbox, _ = reverse
    first, second = await two_accounts(connect_peer)
    await first.send(said("好", 21, real_seq="5001"))
    assert (await inbox.get()).message_id == "21"
    await second.send(copy(said("好", 21, real_seq="5002"), 621, real_seq="5002"))  # a second 好
    await second.send(copy(said("好！", 21), 622, real_seq="5001"))  # rendered otherwise, same message
    assert await handed_on(inbox, second) == ["621"]


async def test_an_at_each_account_names_its_own_way_is_the_same_message(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    """Each account fills in an @'s name from what it knows (the first knows its own nickname, the second
    only the number), so the two events' texts differ: the @ is compared by whom it names."""
    _, inbox, _ = reverse
    first, second = await two_accounts(connect_peer)
    at_the_bot = said("", 51)
    at_the_bot["message"] = [
        {"type": "at", "data": {"qq": "10001"}},
        {"type": "text", "data": {"text": " 在吗"}},
    ]
    await first.send(at_the_bot)
    seen = await inbox.get()
    assert (seen.text, seen.to_bot) == ("@群忆 在吗", True)
    await second.send(copy(at_the_bot, 551))
    assert await handed_on(inbox, second) == []


async def test_ids_all_accounts_share_are_one_message(reverse: Reverse, connect_peer: ConnectPeer) -> None:
    """go-cqhttp and Lagrange.OneBot give every account the same message_id."""
    _, inbox, _ = reverse
    first, second = await two_accounts(connect_peer)
    await first.send(said("明天见", 31))
    assert (await inbox.get()).message_id == "31"
    await second.send(copy(said("明天见", 31), 31, time=1709294200))
    assert await handed_on(inbox, second) == []


async def test_recalls_and_replies_of_the_second_account_name_the_recorded_message(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    """The second account's recall notice and replies name the message by its own id, which was never
    recorded: the recall left the message in memory, and the reply pointed at nothing."""
    _, inbox, _ = reverse
    first, second = await two_accounts(connect_peer)
    second.responders["get_msg"] = lambda params: ok(fixture("group_message_second_account.json"))
    await first.send(fixture("group_message_array.json"))
    await inbox.get()
    await second.send(fixture("group_message_second_account.json"))
    reply = copy(fixture("group_message_reply.json"), 1452, group_id=123456)
    reply["message"][0]["data"]["id"] = "1451"
    await second.send(reply)
    answer = await inbox.get()
    assert answer.message_id == "1452" and answer.reply_to == "-2147400001"
    assert [s.target for s in answer.segments if s.target == "-2147400001"] == ["-2147400001"]
    await second.send(fixture("group_recall_second_account.json"))
    assert await inbox.event() == MessageDeletion("qq", "123456", "-2147400001", ChatKind.GROUP)
    await first.send(fixture("group_recall.json"))
    assert await inbox.event() == MessageDeletion("qq", "123456", "-2147400001", ChatKind.GROUP)


async def test_the_bots_answer_through_one_account_is_not_a_members_message_to_the_other(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    """What the bot sends through the first account reaches the second as a member's message: it was
    recorded a second time, as someone else's words the bot might answer."""
    adapter, inbox, _ = reverse
    first, second = await two_accounts(connect_peer)
    first.responders["send_group_msg"] = lambda params: ok({"message_id": 41})
    sent = await adapter.send_text("123456", "八点见", chat_kind=ChatKind.GROUP)
    assert sent.message_id == "41" and sent.is_bot
    await second.send(copy(said("八点见", 741, **from_the_bot()), 741))
    assert await handed_on(inbox, second) == []


async def test_the_bots_answer_seen_by_the_other_account_before_it_is_sent_is_that_message(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    """When the second account's event for the bot's answer comes before the send returns, that event is
    the bot's message (recorded under the second account's id) and the answer is returned under it, so
    that recording the answer finds it recorded."""
    adapter, inbox, _ = reverse
    first, second = await two_accounts(connect_peer)
    first.responders.pop("send_group_msg", None)  # answered by hand, after the second account's event
    sending = asyncio.ensure_future(adapter.send_text("123456", "九点见", chat_kind=ChatKind.GROUP))
    request = await first.next_action("send_group_msg")
    await second.send(copy(said("九点见", 742, **from_the_bot()), 742))
    seen = await inbox.get()
    assert (seen.message_id, seen.is_bot, seen.to_bot) == ("742", True, False)
    await first.ws.send_json(ok({"message_id": 42}) | {"echo": request["echo"]})
    sent = await asyncio.wait_for(sending, WAIT)
    assert sent.message_id == "742"


async def test_the_group_holds_the_message_once_and_either_accounts_recall_deletes_it(
    reverse: Reverse, connect_peer: ConnectPeer, memory: MemoryService
) -> None:
    """Recorded as handed on: one row for the message both accounts received, and the second account's
    recall, naming its own id of it, leaves the group without it."""
    _, inbox, _ = reverse
    first, second = await two_accounts(connect_peer)
    await first.send(fixture("group_message_array.json"))
    await memory.record(await inbox.get())
    await second.send(fixture("group_message_second_account.json"))
    await second.send(fixture("group_recall_second_account.json"))
    deletion = await inbox.event()
    assert isinstance(deletion, MessageDeletion), "the second account's copy was handed on"
    stored = "SELECT platform_message_id FROM messages"
    with sqlite3.connect(memory.db.path) as connection:
        assert connection.execute(stored).fetchall() == [("-2147400001",)]
    assert await memory.delete(deletion)
    with sqlite3.connect(memory.db.path) as connection:
        assert connection.execute(stored).fetchall() == []
