"""Neutral chat types every adapter produces and the memory consumes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum

from memory.text.clean import clean_text
from memory.text.invisible import drop_invisible
from memory.text.unicode import lone_surrogate_at

MAX_TEXT_CHARS = 1_000_000
# Message times are unix seconds in storage and get intervals added and subtracted by the jobs and by
# recall; within these bounds every such sum stays inside what datetime and fromtimestamp can hold.
EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_TIME = datetime(9000, 1, 1, tzinfo=UTC)
ID_FIELDS = ("platform", "chat_id", "message_id", "sender_id")
# Names lose what shows nothing (`drop_invisible`); one that held nothing else is unknown (""),
# like a name the platform left out.
NAME_FIELDS = ("sender_name", "sender_card", "chat_name")


class InvalidMessage(ValueError):
    """A platform event that cannot become a ChatMessage; the message says which field is wrong."""


class ChatKind(StrEnum):
    GROUP = "group"
    PRIVATE = "private"
    CHANNEL = "channel"


class SegmentKind(StrEnum):
    TEXT = "text"
    MENTION = "mention"
    REPLY = "reply"
    IMAGE = "image"
    FACE = "face"
    FILE = "file"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Segment:
    """One piece of a message: text, a mention (target = user id), a reply (target = message id),
    or media kept as a placeholder (text = "[image]", target = url or file id)."""

    kind: SegmentKind
    text: str = ""
    target: str | None = None

    def to_json(self) -> dict[str, str]:
        data = {"kind": self.kind.value, "text": self.text}
        if self.target is not None:
            data["target"] = self.target
        return data

    @classmethod
    def from_json(cls, data: dict[str, str]) -> Segment:
        return cls(SegmentKind(data["kind"]), data.get("text", ""), data.get("target"))


def clean_name_field(value: str | None) -> str:
    """A sender name, group card or chat name as a ChatMessage keeps it (`NAME_FIELDS`): control
    characters and those that show nothing dropped; empty (unknown) when nothing else was there."""
    return drop_invisible(clean_text(value or ""))


def _check_unicode(name: str, value: str) -> None:
    """Refuse an id holding a lone surrogate: it cannot be stored or sent anywhere as UTF-8."""
    at = lone_surrogate_at(value)
    if at is not None:
        raise InvalidMessage(f"{name} {value!r} is not valid Unicode (a lone surrogate at character {at})")


def _check_id(name: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidMessage(f"{name} must be a non-empty string, got {value!r}")
    _check_unicode(name, value)


def _check_time(value: object) -> None:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidMessage(f"time must be a timezone-aware datetime, got {value!r}")
    if not EARLIEST_TIME <= value < LATEST_TIME:
        raise InvalidMessage(
            f"time {value.isoformat()} is out of range "
            f"({EARLIEST_TIME:%Y-%m-%d} to {LATEST_TIME:%Y-%m-%d} UTC)"
        )


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """A platform-neutral chat message.

    `chat_id`, `message_id` and `sender_id` are the platform's own ids, as strings.
    `time` must be timezone-aware. `is_bot` marks the bot's own outgoing messages;
    `to_bot` marks a message addressed to the bot (an @ of its id, a reply to it);
    `from_bot` marks a message of another bot account (or a webhook): recorded, never answered, so that
    two bots do not answer each other for ever. `edited` marks a new version of a message the platform
    says was edited: it replaces the stored one (with what was learnt from it) and is never answered.
    `forwarded` marks a message re-sharing words written elsewhere (a Telegram or Discord forward): it is
    recorded as a plain message and never runs a memory command, whatever its text looks like.
    """

    platform: str
    chat_id: str
    message_id: str
    sender_id: str
    text: str
    time: datetime
    sender_name: str = ""
    sender_card: str = ""
    chat_name: str = ""
    chat_kind: ChatKind = ChatKind.GROUP
    reply_to: str | None = None
    mentions: tuple[str, ...] = ()
    segments: tuple[Segment, ...] = field(default=())
    is_bot: bool = False
    to_bot: bool = False
    from_bot: bool = False
    edited: bool = False
    forwarded: bool = False

    def __post_init__(self) -> None:
        for name in ID_FIELDS:
            _check_id(name, getattr(self, name))
        if self.reply_to is not None:
            _check_unicode("reply_to", self.reply_to)
        for mention in self.mentions:
            _check_unicode("mentions", str(mention))
        if not isinstance(self.text, str):
            raise InvalidMessage(f"text must be a string, got {type(self.text).__name__}")
        if len(self.text) > MAX_TEXT_CHARS:
            raise InvalidMessage(f"text is {len(self.text)} characters, over the limit of {MAX_TEXT_CHARS}")
        _check_time(self.time)
        object.__setattr__(self, "text", clean_text(self.text))
        # Segments hold the text's words too (a person's own words are read from them): the same
        # characters go, or a lone surrogate kept there fails every request that quotes them.
        segments = tuple(
            s if (t := clean_text(s.text)) == s.text else replace(s, text=t) for s in self.segments
        )
        object.__setattr__(self, "segments", segments)
        for name in NAME_FIELDS:
            object.__setattr__(self, name, clean_name_field(getattr(self, name)))
        object.__setattr__(self, "mentions", tuple(str(m) for m in self.mentions))

    @classmethod
    def outgoing(
        cls,
        platform: str,
        chat_id: str,
        message_id: str,
        bot_id: str,
        bot_name: str,
        text: str,
        time: datetime,
        chat_kind: ChatKind = ChatKind.GROUP,
        reply_to: str | None = None,
    ) -> ChatMessage:
        """The bot's own message as a local outbound seam (console, replay) records it."""
        return cls(
            platform=platform,
            chat_id=chat_id,
            message_id=message_id,
            sender_id=bot_id,
            sender_name=bot_name,
            text=text,
            time=time,
            chat_kind=chat_kind,
            reply_to=reply_to,
            is_bot=True,
        )

    @property
    def display_name(self) -> str:
        """What a group member sees: the group card, else the nickname, else the id."""
        return self.sender_card or self.sender_name or self.sender_id


@dataclass(frozen=True, slots=True)
class MessageDeletion:
    """A platform's word that a message was deleted (a QQ 撤回, a Discord delete): the message and what
    was learnt from it are forgotten. Ids are the platform's own, as in ChatMessage."""

    platform: str
    chat_id: str
    message_id: str
    chat_kind: ChatKind = ChatKind.GROUP

    def __post_init__(self) -> None:
        for name in ID_FIELDS[:3]:
            _check_id(name, getattr(self, name))


@dataclass(frozen=True, slots=True)
class ChatMoved:
    """A platform moved a chat to a new id (a Telegram group upgraded to a supergroup): what is
    remembered under `old_chat_id` belongs to `new_chat_id` from now on."""

    platform: str
    old_chat_id: str
    new_chat_id: str


@dataclass(frozen=True, slots=True)
class MembershipChange:
    """A platform's word that member `user_id` left the chats `chat_ids` (on their own, or removed by
    someone: `joined` False) or joined them (`joined` True) at `time`. Ids are the platform's own, as in
    ChatMessage; `chat_ids` is one group, or every channel and thread of a Discord server (a server's
    members are those of all its channels). Memory marks a member who left as gone from the chat, unless
    they wrote there after `time` (the platform's events may come out of order); a join, or a message of
    theirs dated after the mark, ends it (memory.membership). It never makes a member of someone the chat
    has not seen: membership is still who has written there."""

    platform: str
    chat_ids: tuple[str, ...]
    user_id: str
    time: datetime
    joined: bool = False

    def __post_init__(self) -> None:
        _check_id("platform", self.platform)
        _check_id("user_id", self.user_id)
        if not isinstance(self.chat_ids, tuple) or not self.chat_ids:
            raise InvalidMessage(f"chat_ids must be a non-empty tuple, got {self.chat_ids!r}")
        for chat_id in self.chat_ids:
            _check_id("chat_id", chat_id)
        _check_time(self.time)

    @property
    def what(self) -> str:
        """The change in a log line's words: "joined" or "left"."""
        return "joined" if self.joined else "left"


InboundEvent = ChatMessage | MessageDeletion | ChatMoved | MembershipChange
