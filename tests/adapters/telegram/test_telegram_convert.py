"""aiogram Message objects (built from Bot API JSON) to ChatMessage."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytest.importorskip("aiogram", reason="the telegram extra is not installed")

from aiogram.types import ChatMemberUpdated, Message

from adapters.telegram.convert import member_update, message_to_chat
from memory.types import ChatKind, MembershipChange, SegmentKind

UPDATES = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures" / "telegram" / "updates.json").read_text()
)
BOT_ID = 999


def message(index: int, **changes: object) -> Message:
    return Message.model_validate(UPDATES[index]["message"] | changes)


def test_plain_group_message() -> None:
    msg = message_to_chat(message(0), bot_id=BOT_ID, bot_username="qunyi_bot")
    assert msg is not None
    assert (msg.chat_id, msg.message_id, msg.sender_id) == ("-1001987654321", "40", "111")
    assert msg.sender_name == "Alice Liu" and msg.display_name == "Alice Liu"
    assert msg.chat_name == "周末开黑群" and msg.chat_kind is ChatKind.GROUP
    assert msg.time == datetime(2026, 3, 1, 12, 1, tzinfo=UTC)
    assert not msg.to_bot and not msg.is_bot


def test_mentions_use_utf16_offsets_and_the_bot_username_means_the_bot() -> None:
    msg = message_to_chat(message(1), bot_id=BOT_ID, bot_username="qunyi_bot")
    assert msg is not None
    assert [(s.kind, s.text, s.target) for s in msg.segments if s.kind is SegmentKind.MENTION] == [
        (SegmentKind.MENTION, "@qunyi_bot", "999"),
        (SegmentKind.MENTION, "Carol", "333"),
    ]
    assert msg.mentions == ("999", "333") and msg.to_bot
    assert msg.text == "👍 @qunyi_bot 记一下，叫上 Carol"
    assert msg.reply_to == "40" and msg.segments[0].text == "🎮周六晚上八点打本？"


def test_other_usernames_stay_as_text_targets() -> None:
    msg = message_to_chat(message(1), bot_id=BOT_ID, bot_username="another_bot")
    assert msg is not None and msg.mentions == ("@qunyi_bot", "333") and not msg.to_bot


def test_reply_to_the_bot_with_a_photo() -> None:
    msg = message_to_chat(message(3), bot_id=BOT_ID, bot_username="qunyi_bot")
    assert msg is not None and msg.to_bot and msg.reply_to == "500"
    assert msg.text == "[image] 装备截图"
    assert msg.segments[1].kind is SegmentKind.IMAGE and msg.segments[1].target == "large-id"


def test_service_message_is_none() -> None:
    assert message_to_chat(message(2), bot_id=BOT_ID) is None


@pytest.mark.parametrize("text", ["\x01\x02\x1b", "\x00 \x7f", "\u200b\u2060"])
def test_a_message_of_control_characters_only_is_passed_over_as_the_others_do(text: str) -> None:
    """It was stored as an empty message; the other adapters pass such a message over."""
    assert message_to_chat(message(0, text=text), bot_id=BOT_ID) is None
    kept = message_to_chat(message(0, text="\x01周末\x02"), bot_id=BOT_ID)
    assert kept is not None and kept.text == "周末"


def test_private_chat_is_addressed_to_the_bot_and_anonymous_admin_speaks_as_the_chat() -> None:
    private = message(0, chat={"id": 111, "type": "private", "first_name": "Alice", "last_name": "Liu"})
    msg = message_to_chat(private, bot_id=BOT_ID)
    assert (
        msg is not None and msg.chat_kind is ChatKind.PRIVATE and msg.to_bot and msg.chat_name == "Alice Liu"
    )
    anonymous = message(0, sender_chat={"id": -1001987654321, "title": "周末开黑群", "type": "supergroup"})
    msg = message_to_chat(anonymous, bot_id=BOT_ID)
    assert msg is not None and msg.sender_id == "-1001987654321" and msg.sender_name == "周末开黑群"


def test_forum_topic_opening_is_not_a_reply() -> None:
    opening = UPDATES[0]["message"] | {
        "message_id": 7,
        "forum_topic_created": {"name": "raid", "icon_color": 1},
    }
    in_topic = message(0, is_topic_message=True, message_thread_id=7, reply_to_message=opening)
    msg = message_to_chat(in_topic, bot_id=BOT_ID)
    assert msg is not None and msg.reply_to is None


def test_another_bot_is_marked_but_an_anonymous_admin_is_a_person() -> None:
    """Another bot's messages are recorded and never answered (two bots would answer each other for
    ever); an anonymous admin's message comes from the bot account GroupAnonymousBot, yet a person
    wrote it."""
    other_bot = {"id": 555, "is_bot": True, "first_name": "Helper", "username": "helper_bot"}
    msg = message_to_chat(message(0, **{"from": other_bot}), bot_id=BOT_ID)
    assert msg is not None and msg.from_bot and not msg.is_bot
    anonymous_bot = {"id": 1087968824, "is_bot": True, "first_name": "Group", "username": "GroupAnonymousBot"}
    group = {"id": -1001987654321, "title": "周末开黑群", "type": "supergroup"}
    msg = message_to_chat(message(0, **{"from": anonymous_bot}, sender_chat=group), bot_id=BOT_ID)
    assert msg is not None and not msg.from_bot
    msg = message_to_chat(message(0), bot_id=BOT_ID)
    assert msg is not None and not msg.from_bot


def test_a_lone_surrogate_in_the_text_keeps_the_message_and_its_mentions() -> None:
    """JSON may escape a lone surrogate (`"\\ud83d"`); cutting the text at the entities' UTF-16 offsets
    raised UnicodeEncodeError, and the whole message was lost with a traceback (found by the QA pass)."""
    text = "/recall@qunyi_bot \ud83d @qunyi_bot 爬山"
    entities = [
        {"type": "bot_command", "offset": 0, "length": 17},
        {"type": "mention", "offset": 20, "length": 10},
    ]
    msg = message_to_chat(message(0, text=text, entities=entities), bot_id=BOT_ID, bot_username="qunyi_bot")
    assert msg is not None and msg.to_bot and msg.mentions == ("999",)
    assert msg.text == "/recall@qunyi_bot \ufffd @qunyi_bot 爬山"
    caption = message_to_chat(
        message(
            0,
            text=None,
            caption="图\udc00",
            photo=[{"file_id": "p", "file_unique_id": "u", "width": 1, "height": 1}],
        ),
        bot_id=BOT_ID,
    )
    assert caption is not None and caption.text == "[image] 图\ufffd"


def test_a_forwarded_mention_or_command_addresses_no_one() -> None:
    """A member forwarding a message that @-ed the bot (or was `/recall@qunyi_bot …`) elsewhere is not
    talking to the bot: it answered every such forward, where Discord's forwards address no one
    (found by the QA pass)."""
    origin = {"type": "hidden_user", "sender_user_name": "某人", "date": 1772366000}
    forwarded = message_to_chat(message(1, forward_origin=origin), bot_id=BOT_ID, bot_username="qunyi_bot")
    assert forwarded is not None and forwarded.text == "👍 @qunyi_bot 记一下，叫上 Carol"
    assert forwarded.mentions == () and not forwarded.to_bot
    assert SegmentKind.MENTION not in {s.kind for s in forwarded.segments}
    command = {"type": "bot_command", "offset": 0, "length": 17}
    text = "/recall@qunyi_bot 爬山"
    sent = message_to_chat(message(0, text=text, entities=[command]), bot_id=BOT_ID, bot_username="qunyi_bot")
    assert sent is not None and sent.to_bot
    relayed = message_to_chat(
        message(0, text=text, entities=[command], forward_origin=origin),
        bot_id=BOT_ID,
        bot_username="qunyi_bot",
    )
    assert relayed is not None and not relayed.to_bot


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("game", {"title": "猜成语", "description": "d", "photo": []}, "[game: 猜成语]"),
        ("checklist", {"title": "周六要带", "tasks": [{"id": 1, "text": "水"}]}, "[checklist: 周六要带]"),
        ("story", {"chat": {"id": -1001987654321, "type": "supergroup"}, "id": 5}, "[story]"),
        ("paid_media", {"star_count": 5, "paid_media": []}, "[paid media]"),
    ],
)
def test_a_message_holding_only_a_game_checklist_story_or_paid_media_is_kept(
    field: str, value: object, shown: str
) -> None:
    """Such messages were taken for service messages and lost (found by the QA pass)."""
    base = {k: v for k, v in UPDATES[0]["message"].items() if k not in ("text", "entities")}
    msg = message_to_chat(Message.model_validate(base | {field: value}), bot_id=BOT_ID)
    assert msg is not None and msg.text == shown


def member_updated(old: dict[str, object], new: dict[str, object], user_id: int = 111) -> ChatMemberUpdated:
    user = {"id": user_id, "is_bot": user_id == BOT_ID, "first_name": "Alice"}
    return ChatMemberUpdated.model_validate(
        {
            "chat": {"id": -1001987654321, "type": "supergroup", "title": "周末开黑群"},
            "from": {"id": 222, "is_bot": False, "first_name": "Bob"},
            "date": 1772366700,
            "old_chat_member": old | {"user": user},
            "new_chat_member": new | {"user": user},
        }
    )


def test_a_chat_member_update_is_a_change_only_when_the_member_leaves_or_joins() -> None:
    member, left = {"status": "member"}, {"status": "left"}
    owner = {"status": "creator", "is_anonymous": False}
    gone = member_update(member_updated(member, left), bot_id=BOT_ID)
    assert gone == MembershipChange(
        "telegram", ("-1001987654321",), "111", datetime.fromtimestamp(1772366700, UTC)
    )
    back = member_update(member_updated(left, member), bot_id=BOT_ID)
    assert back is not None and back.joined
    assert member_update(member_updated(member, owner), bot_id=BOT_ID) is None, "made the owner: still in"
    assert member_update(member_updated(member, left, user_id=BOT_ID), bot_id=BOT_ID) is None, "the bot"
