"""OneBot v11 events: classify incoming frames and turn message events into `ChatMessage`s.

Every `sender` field is optional (the spec says implementations may omit any of them), message ids may be
negative (NapCat hashes them into int32), and the display name is the group card, else the nickname.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from adapters.neutral import as_id, mapping_at
from adapters.onebot_v11.message import RawSegment, normalize_message, to_neutral
from memory.types import (
    ChatKind,
    ChatMessage,
    InvalidMessage,
    MembershipChange,
    MessageDeletion,
    Segment,
    SegmentKind,
)

PLATFORM = "qq"
# QQ numbers and group numbers share one number space: the private chat with user 30003 is named
# "private-30003", so it is never the same chat (memory, notes, settings) as group 30003.
PRIVATE_CHAT_PREFIX = "private-"
# What NapCat (src/onebot/api/msg.ts, parseMessage) gives a temporary session's message when it could not
# look the session up: a stand-in group and sender nickname, neither of them the member's.
NAPCAT_UNKNOWN_TEMP_GROUP = "284840486"
NAPCAT_UNKNOWN_TEMP_NAME = "临时会话"


def private_chat_id(user_id: str) -> str:
    """The chat id of the private chat with a QQ user (`private-<QQ>`), apart from every group number."""
    return f"{PRIVATE_CHAT_PREFIX}{user_id}"


def private_peer(chat_id: str) -> str:
    """The QQ number a private chat id names (a bare number is taken as it is)."""
    return chat_id.removeprefix(PRIVATE_CHAT_PREFIX)


def is_action_response(data: Mapping[str, Any]) -> bool:
    """An answer to one of our actions (it carries our `echo` and a status, and is no event)."""
    return "post_type" not in data and ("status" in data or "retcode" in data)


def post_type(data: Mapping[str, Any]) -> str | None:
    """The event's `post_type` (`message`, `message_sent`, `notice`, `request`, `meta_event`)."""
    value = data.get("post_type")
    return value if isinstance(value, str) else None


def recall_notice(data: Mapping[str, Any]) -> MessageDeletion | None:
    """The deletion a `group_recall` or `friend_recall` notice (a QQ 撤回) reports; None for any other
    notice. Raises InvalidMessage when the notice lacks its chat or message id."""
    notice = data.get("notice_type")
    if notice == "group_recall":
        chat, kind = as_id(data.get("group_id")), ChatKind.GROUP
    elif notice == "friend_recall":
        user = as_id(data.get("user_id"))
        chat, kind = (private_chat_id(user) if user else None), ChatKind.PRIVATE
    else:
        return None
    message_id = as_id(data.get("message_id"))
    if chat is None or message_id is None:
        raise InvalidMessage(f"{notice} notice without its chat or message id")
    return MessageDeletion(PLATFORM, chat, message_id, kind)


MEMBERSHIP_NOTICES = {"group_decrease": False, "group_increase": True}  # notice_type -> joined
BOT_REMOVED = "kick_me"  # group_decrease's sub_type when the bot's own account was removed


def membership_notice(data: Mapping[str, Any]) -> MembershipChange | None:
    """The member leaving a group (`group_decrease`: sub_type `leave`, `kick`, or `kick_me` for the
    bot's own account) or joining it (`group_increase`: `approve`, `invite`) that a notice reports;
    None for any other notice. NapCat, Lagrange.OneBot and go-cqhttp send the same shape. Raises
    InvalidMessage when the notice lacks its group, its user or a readable time."""
    joined = MEMBERSHIP_NOTICES.get(str(data.get("notice_type")))
    if joined is None:
        return None
    group, user = as_id(data.get("group_id")), as_id(data.get("user_id"))
    if group is None or user is None:
        raise InvalidMessage(f"{data.get('notice_type')} notice without its group or user id")
    return MembershipChange(PLATFORM, (group,), user, event_time(data.get("time")), joined=joined)


@dataclass(frozen=True, slots=True)
class MetaEvent:
    """A lifecycle or heartbeat meta event."""

    self_id: str | None
    meta_event_type: str
    sub_type: str = ""
    interval_ms: int | None = None
    online: bool | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetaEvent:
        status = mapping_at(data, "status")
        online = status.get("online")
        return cls(
            self_id=as_id(data.get("self_id")),
            meta_event_type=str(data.get("meta_event_type") or ""),
            sub_type=str(data.get("sub_type") or ""),
            interval_ms=_interval_ms(data.get("interval")),
            online=online if isinstance(online, bool) else None,
        )


_MAX_INTERVAL_MS = 86_400_000
_MS_THRESHOLD = 100_000_000_000  # unix seconds past this (year 5138) are read as milliseconds


def event_time(raw: Any) -> datetime:
    """An event's `time`: unix seconds, or milliseconds past `_MS_THRESHOLD` (NapCat falls back to
    Date.now()). Raises InvalidMessage for anything else."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise InvalidMessage(f"time must be unix seconds, got {raw!r}")
    if raw > _MS_THRESHOLD:
        raw = raw / 1000
    try:
        return datetime.fromtimestamp(raw, UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise InvalidMessage(f"time {raw!r} is out of range") from exc


def _interval_ms(value: Any) -> int | None:
    """A heartbeat interval in milliseconds, or None for anything but a positive number up to a day."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not 0 < value <= _MAX_INTERVAL_MS:  # also false for NaN
        return None
    return int(value)


@dataclass(frozen=True, slots=True)
class MessageEvent:
    """A group or private message event (or a `get_msg` / history result of the same shape)."""

    message_type: str
    message_id: str
    user_id: str
    time: datetime
    message: list[RawSegment]
    self_id: str | None = None
    group_id: str | None = None
    group_name: str = ""
    sender: Mapping[str, Any] = field(default_factory=dict)
    anonymous: Mapping[str, Any] | None = None
    self_sent: bool = False
    target_id: str | None = None
    sub_type: str = ""
    seq: str | None = None  # the group's sequence number of the message (NapCat's `real_seq`), if posted

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MessageEvent:
        """Validate and parse; raises `InvalidMessage` naming the bad field."""
        if not isinstance(data, Mapping):
            raise InvalidMessage(f"an event must be a JSON object, got {type(data).__name__}")
        message_type = data.get("message_type")
        group_id = as_id(data.get("group_id"))
        if message_type not in ("group", "private"):
            if message_type is None and group_id is not None:
                message_type = "group"
            else:
                raise InvalidMessage(f"message_type must be 'group' or 'private', got {message_type!r}")
        message_id = as_id(data.get("message_id"))
        if message_id is None:
            raise InvalidMessage(f"message_id is missing or not an id: {data.get('message_id')!r}")
        sender = mapping_at(data, "sender")
        user_id = as_id(data.get("user_id")) or as_id(sender.get("user_id"))
        if user_id is None:
            raise InvalidMessage("user_id is missing (neither the event nor its sender has one)")
        if message_type == "group" and group_id is None:
            raise InvalidMessage("a group message has no group_id")
        when = event_time(data.get("time"))
        message = data.get("message")
        if message is None:
            message = data.get("raw_message", "")
        anonymous = data.get("anonymous") if isinstance(data.get("anonymous"), Mapping) else None
        self_id = as_id(data.get("self_id"))
        self_sent = data.get("post_type") == "message_sent"
        # the other party of a private message the bot sent: top level (NapCat, go-cqhttp), or in sender
        target_id = as_id(data.get("target_id")) or as_id(sender.get("target_id"))
        if message_type == "private" and (self_sent or user_id == self_id) and target_id is None:
            raise InvalidMessage("a private message sent by the bot names no target_id (whom it went to)")
        return cls(
            message_type=message_type,
            message_id=message_id,
            user_id=user_id,
            time=when,
            message=normalize_message(message),
            self_id=self_id,
            group_id=group_id,
            group_name=str(data.get("group_name") or ""),
            sender=sender,
            anonymous=anonymous,
            self_sent=self_sent,
            target_id=target_id,
            sub_type=str(data.get("sub_type") or ""),
            seq=as_id(data.get("real_seq")),
        )

    @property
    def chat_id(self) -> str:
        """The group number for group messages, `private-<QQ>` of the other party for private ones
        (for a private message the bot sent, the `target_id` it went to, never the bot's own QQ)."""
        if self.message_type == "group":
            assert self.group_id is not None
            return self.group_id
        if self.target_id is not None and (self.self_sent or self.user_id == self.self_id):
            return private_chat_id(self.target_id)
        return private_chat_id(self.user_id)

    @property
    def temp_group(self) -> str | None:
        """For a temporary session (群临时会话: a private message with `sub_type` "group" from a member
        who is no friend), the group it came through: `sender.group_id` (go-cqhttp) or a top-level
        `group_id` (NapCat, which also puts it in `temp_source`). Answers go through it
        (`send_private_msg` with `group_id`). None when the event does not tell it: Lagrange.OneBot
        names no group, and NapCat gives its stand-in group when it could not look the session up; the
        chat is then answered as a friend's."""
        if not self._temp_session:
            return None
        group = as_id(self.sender.get("group_id")) or self.group_id
        return None if group == NAPCAT_UNKNOWN_TEMP_GROUP else group

    @property
    def _temp_session(self) -> bool:
        return self.message_type == "private" and self.sub_type == "group"

    @property
    def chat_kind(self) -> ChatKind:
        return ChatKind.GROUP if self.message_type == "group" else ChatKind.PRIVATE

    @property
    def nickname(self) -> str:
        if self.anonymous:
            return str(self.anonymous.get("name") or "")
        nickname = str(self.sender.get("nickname") or "")
        if (
            self._temp_session
            and self.group_id == NAPCAT_UNKNOWN_TEMP_GROUP
            and nickname == NAPCAT_UNKNOWN_TEMP_NAME
        ):
            return ""  # NapCat's stand-in, not the member's name: kept, it would rename them
        return nickname

    @property
    def card(self) -> str:
        return str(self.sender.get("card") or "")


@dataclass(frozen=True, slots=True)
class ReplyInfo:
    """What is known about the message a reply segment points to."""

    sender_id: str | None = None
    text: str = ""


def to_chat_message(
    event: MessageEvent,
    *,
    self_id: str | None = None,
    reply: ReplyInfo | None = None,
    names: Mapping[str, str] | None = None,
    platform: str = PLATFORM,
    accounts: Collection[str] = (),
) -> ChatMessage:
    """The neutral form of a message event.

    `to_bot` is set for an `@` of `self_id` or of one of the bot's other `accounts`, for a reply whose
    target was sent by one of them (as told by `reply`), and for every private message to the bot.
    `is_bot` marks the bot's own messages, from whichever of its accounts: with several accounts in a
    group, the message is the same whichever account's event is recorded.
    """
    converted = to_neutral(event.message, names=names)
    me = self_id or event.self_id
    ours = {*accounts, *([me] if me is not None else [])}
    is_bot = event.self_sent or event.user_id in ours
    segments = converted.segments
    if reply is not None and reply.text and converted.reply_to is not None:
        segments = tuple(
            Segment(SegmentKind.REPLY, reply.text, s.target)
            if s.kind is SegmentKind.REPLY and s.target == converted.reply_to
            else s
            for s in segments
        )
    to_bot = False
    if not is_bot and ours:
        to_bot = (
            not ours.isdisjoint(converted.mentions)
            or (reply is not None and reply.sender_id in ours)
            or event.message_type == "private"
        )
    return ChatMessage(
        platform=platform,
        chat_id=event.chat_id,
        message_id=event.message_id,
        sender_id=event.user_id,
        text=converted.text,
        time=event.time,
        sender_name=event.nickname,
        sender_card=event.card,
        chat_name=event.group_name,
        chat_kind=event.chat_kind,
        reply_to=converted.reply_to,
        mentions=converted.mentions,
        segments=segments,
        is_bot=is_bot,
        to_bot=to_bot,
    )
