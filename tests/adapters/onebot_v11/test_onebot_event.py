from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.onebot_v11.event import (
    MessageEvent,
    MetaEvent,
    ReplyInfo,
    is_action_response,
    recall_notice,
    to_chat_message,
)
from bot.commands import answers
from memory.service import MemoryService
from memory.types import ChatKind, InvalidMessage, MessageDeletion, SegmentKind

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "onebot_v11"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_group_message_array_form() -> None:
    msg = to_chat_message(MessageEvent.from_dict(load("group_message_array.json")))
    assert (msg.platform, msg.chat_id, msg.message_id, msg.sender_id) == (
        "qq",
        "123456",
        "-2147400001",
        "20002",
    )
    assert msg.display_name == "红红（周末有空）"
    assert msg.sender_name == "小红"
    assert msg.time == datetime.fromtimestamp(1709294160, UTC)
    assert msg.text == "今晚开黑吗 [face][image]"
    assert [s.kind for s in msg.segments][-1] is SegmentKind.IMAGE
    assert not msg.to_bot and not msg.is_bot


def test_cq_form_with_at_of_the_bot_is_addressed_to_it() -> None:
    msg = to_chat_message(MessageEvent.from_dict(load("group_message_cq.json")))
    assert msg.to_bot
    assert msg.mentions == ("10001",)
    assert msg.text == "@10001 查一下 [上周] 谁说了 A&B,好吗"
    assert msg.display_name == "阿明"  # no card: the nickname


def test_every_sender_field_is_optional() -> None:
    msg = to_chat_message(MessageEvent.from_dict(load("group_message_reply.json")))
    assert msg.sender_id == "20002" and msg.display_name == "20002"
    assert msg.reply_to == "-1234" and not msg.to_bot
    replied = to_chat_message(
        MessageEvent.from_dict(load("group_message_reply.json")), reply=ReplyInfo("10001", "周六")
    )
    assert replied.to_bot
    assert replied.segments[0].text == "周六"


def test_private_message_is_addressed_to_the_bot() -> None:
    msg = to_chat_message(MessageEvent.from_dict(load("private_message.json")))
    assert msg.chat_kind is ChatKind.PRIVATE and msg.chat_id == "private-20002" and msg.to_bot


async def test_a_private_chat_is_never_the_group_of_the_same_number(memory: MemoryService) -> None:
    # QQ numbers and group numbers overlap: what user 30003 tells the bot privately stays out of group 30003.
    private = load("private_message.json") | {
        "user_id": 30003,
        "message": "我的银行卡密码是 778899",
        "sender": {"user_id": 30003, "nickname": "小红"},
    }
    group = load("group_message_array.json") | {"group_id": 30003, "message_id": 7002}
    group["message"] = "银行卡办好了"
    said = [to_chat_message(MessageEvent.from_dict(event)) for event in (private, group)]
    assert [m.chat_id for m in said] == ["private-30003", "30003"]
    chats = [(await memory.record(m)).chat_id for m in said]
    assert chats[0] != chats[1]
    in_group = await answers.recall(memory, chats[1], "银行卡密码")
    assert [r["text"] for r in in_group.data["results"]] == ["银行卡办好了"]
    in_private = await answers.recall(memory, chats[0], "银行卡密码")
    assert [r["text"] for r in in_private.data["results"]] == ["我的银行卡密码是 778899"]


def test_own_message_is_marked_as_bot() -> None:
    event = load("group_message_array.json") | {"post_type": "message_sent", "user_id": 10001}
    msg = to_chat_message(MessageEvent.from_dict(event))
    assert msg.is_bot and not msg.to_bot


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"message_id": None}, "message_id"),
        ({"time": "yesterday"}, "time"),
        ({"message_type": "guild"}, "message_type"),
        ({"group_id": None}, "group_id"),
    ],
)
def test_invalid_events_name_the_bad_field(change: dict, field: str) -> None:
    with pytest.raises(InvalidMessage, match=field):
        MessageEvent.from_dict(load("group_message_array.json") | change)


def test_action_responses_are_told_apart_from_events() -> None:
    assert is_action_response({"status": "ok", "retcode": 0, "data": None, "echo": "1"})
    assert not is_action_response(load("heartbeat.json"))


@pytest.mark.parametrize(
    ("interval", "expected"),
    [
        (5000, 5000),
        (2500.9, 2500),
        (0, None),
        (-1, None),
        (True, None),
        ("5000", None),
        (None, None),
        (float("inf"), None),
        (float("nan"), None),
        (10**400, None),
    ],
)
def test_heartbeat_interval_is_a_positive_number_up_to_a_day(interval: object, expected: int | None) -> None:
    assert MetaEvent.from_dict(load("heartbeat.json") | {"interval": interval}).interval_ms == expected


def test_private_message_the_bot_sent_belongs_to_the_chat_with_its_target() -> None:
    # NapCat and go-cqhttp put target_id at the top level of a private message_sent event.
    sent = load("private_message.json") | {
        "post_type": "message_sent",
        "message_sent_type": "self",
        "user_id": 10001,
        "target_id": 20002,
        "sender": {"user_id": 10001, "nickname": "群忆"},
    }
    msg = to_chat_message(MessageEvent.from_dict(sent))
    assert (msg.chat_id, msg.sender_id, msg.is_bot) == ("private-20002", "10001", True)
    in_sender = sent | {"target_id": None, "sender": {"user_id": 10001, "target_id": 20002}}
    assert to_chat_message(MessageEvent.from_dict(in_sender)).chat_id == "private-20002"
    # Without a target the chat is unknown: skipped, never recorded in a chat named after the bot.
    with pytest.raises(InvalidMessage, match="target_id"):
        MessageEvent.from_dict(sent | {"target_id": None})


def test_time_in_milliseconds_is_read_as_such() -> None:
    # NapCat sends Date.now() (milliseconds) when a message has no time of its own.
    event = MessageEvent.from_dict(load("group_message_array.json") | {"time": 1709294160123})
    assert event.time == datetime.fromtimestamp(1709294160.123, UTC)
    with pytest.raises(InvalidMessage, match="time"):
        MessageEvent.from_dict(load("group_message_array.json") | {"time": 10**20})


def test_recall_notices_are_deletions_in_the_chat_of_the_message() -> None:
    group = recall_notice(load("group_recall.json"))
    friend = recall_notice(load("friend_recall.json"))
    assert group == MessageDeletion("qq", "123456", "-2147400001", ChatKind.GROUP)
    assert friend == MessageDeletion("qq", "private-20002", "6001", ChatKind.PRIVATE)
    assert recall_notice(load("group_notice_increase.json")) is None
    with pytest.raises(InvalidMessage, match="group_recall"):
        recall_notice({"post_type": "notice", "notice_type": "group_recall", "group_id": 1})


def test_a_mention_or_reply_naming_no_valid_id_is_left_out_and_the_message_kept() -> None:
    """An `at` or `reply` segment whose id held a lone surrogate (escaped in the frame's JSON) made the
    neutral message refuse the whole event: its text was lost for one unusable id."""
    event = load("group_message_array.json") | {
        "message": [
            {"type": "reply", "data": {"id": "\udc00"}},
            {"type": "at", "data": {"qq": "\ud800", "name": "谁"}},
            {"type": "text", "data": {"text": " 今晚开黑吗"}},
            {"type": "at", "data": {"qq": "10001"}},
        ]
    }
    msg = to_chat_message(MessageEvent.from_dict(event), self_id="10001")
    assert msg.text == "今晚开黑吗@10001" and msg.mentions == ("10001",) and msg.to_bot
    assert msg.reply_to is None and all(s.kind is not SegmentKind.REPLY for s in msg.segments)


@pytest.mark.parametrize(
    ("name", "chat", "group", "nickname"),
    [
        # go-cqhttp: the group in sender.group_id
        ("private_message_temp.json", "private-20003", "123456", "阿明"),
        # NapCat (src/onebot/api/msg.ts parseMessage): a top-level group_id, temp_source the same
        ("private_message_temp_napcat.json", "private-20005", "123456", "阿明的小号"),
        # NapCat when its session lookup failed: a stand-in group and nickname, neither the member's
        ("private_message_temp_napcat_unknown.json", "private-20006", None, ""),
        # Lagrange.OneBot (MessageService.OnTempMessageReceived): sub_type "group", no group anywhere
        ("private_message_temp_lagrange.json", "private-20007", None, "小周"),
    ],
)
def test_temporary_sessions_as_each_implementation_posts_them(
    name: str, chat: str, group: str | None, nickname: str
) -> None:
    """A temporary session's message is a private chat with its member; the group it came through is
    the one the event names, and none (a friend's chat, as for an unknown form) when it names none or
    only NapCat's stand-in, whose nickname "临时会话" would have renamed the member."""
    event = MessageEvent.from_dict(load(name))
    message = to_chat_message(event)
    assert (message.chat_id, message.chat_kind, event.temp_group) == (chat, ChatKind.PRIVATE, group)
    assert message.sender_name == nickname and message.to_bot
