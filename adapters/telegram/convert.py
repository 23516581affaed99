"""aiogram `Message` ⇄ neutral `ChatMessage`. Works on the objects' attributes; imports no aiogram.

Telegram entity offsets count UTF-16 code units, so text is cut in UTF-16 (an emoji counts twice).
`@username` mentions carry no user id: the target is the `@username` itself, except for the bot's own
username, which becomes the bot's id. Messages in forum topics are not replies to the topic's opening
message unless the user really replied. A forwarded message keeps its text, but its mentions and
commands address no one (the member forwarding it did not write them) and it never runs a command.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from adapters.neutral import addressing_no_one, holds_nothing, joined_text, mention_targets
from memory.text import truncate
from memory.types import ChatKind, ChatMessage, MembershipChange, Segment, SegmentKind

if TYPE_CHECKING:
    from aiogram.types import ChatMemberUpdated, Message, MessageEntity

PLATFORM = "telegram"
_QUOTE_CHARS = 60
_KINDS = {
    "private": ChatKind.PRIVATE,
    "group": ChatKind.GROUP,
    "supergroup": ChatKind.GROUP,
    "channel": ChatKind.CHANNEL,
}


def message_to_chat(message: Message, *, bot_id: int, bot_username: str | None = None) -> ChatMessage | None:
    """The neutral form of `message`, or None for service messages (joins, pins, title changes…) and
    for one that holds nothing (`holds_nothing`: its text only control characters, say)."""
    media = _media(message)
    body = message.text if message.text is not None else (message.caption or "")
    entities = message.entities if message.text is not None else message.caption_entities
    words = _text_segments(body, entities or [], bot_id, bot_username)
    forwarded = message.forward_origin is not None
    if forwarded:  # the @s and commands of a forward were written elsewhere, to someone else
        words = addressing_no_one(words)
    if not media and not words:
        return None
    chat = message.chat
    sender_id, sender_name = _sender(message)
    mentions = mention_targets(words)
    reply_to, reply_segment, replied_to_bot = _reply(message, bot_id)
    segments = ((reply_segment,) if reply_segment else ()) + media + words
    text = joined_text(media, words)
    kind = _KINDS.get(str(chat.type), ChatKind.GROUP)
    is_bot = sender_id == str(bot_id)
    cut = _utf16_cutter(body)
    addressed_by_command = (
        not forwarded
        and bot_username is not None
        and any(
            e.type == "bot_command"
            and cut(e.offset, e.offset + e.length).lower().endswith(f"@{bot_username.lower()}")
            for e in entities or []
        )
    )
    to_bot = not is_bot and (
        kind is ChatKind.PRIVATE or str(bot_id) in mentions or replied_to_bot or addressed_by_command
    )
    when = _aware(message.date)
    converted = ChatMessage(
        platform=PLATFORM,
        chat_id=str(chat.id),
        message_id=str(message.message_id),
        sender_id=sender_id,
        text=text,
        time=when,
        sender_name=sender_name,
        chat_name=chat.title or " ".join(p for p in (chat.first_name, chat.last_name) if p),
        chat_kind=kind,
        reply_to=reply_to,
        mentions=mentions,
        segments=segments,
        is_bot=is_bot,
        to_bot=to_bot,
        from_bot=not is_bot and _from_another_bot(message),
        forwarded=forwarded,
    )
    return None if holds_nothing(converted.text) else converted


_IN_CHAT = ("creator", "administrator", "member")  # a `restricted` member is in it while `is_member`


def membership_changes(message: Message, *, bot_id: int) -> list[MembershipChange]:
    """The members a service message says left the chat (`left_chat_member`: left on their own or
    removed) or joined it (`new_chat_members`), at its date; the bot's own account is left out (the
    bot leaving says nothing of anyone else)."""
    told = [(message.left_chat_member, False)] if message.left_chat_member is not None else []
    told += [(user, True) for user in message.new_chat_members or []]
    when = _aware(message.date)
    return [
        MembershipChange(PLATFORM, (str(message.chat.id),), str(user.id), when, joined=joined)
        for user, joined in told
        if user.id != bot_id
    ]


def member_update(updated: ChatMemberUpdated, *, bot_id: int) -> MembershipChange | None:
    """The member a `chat_member` update says left the chat (now `left` or `kicked`, or `restricted`
    and no longer a member) or joined it; None for a change that keeps them in it, or out of it (a
    promotion, a new restriction), and for the bot's own account."""
    user = updated.new_chat_member.user
    was, now = _in_chat(updated.old_chat_member), _in_chat(updated.new_chat_member)
    if was == now or user.id == bot_id:
        return None
    return MembershipChange(PLATFORM, (str(updated.chat.id),), str(user.id), _aware(updated.date), joined=now)


def _in_chat(member: Any) -> bool:
    return member.status in _IN_CHAT or bool(getattr(member, "is_member", False))


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _sender(message: Message) -> tuple[str, str]:
    if message.sender_chat is not None:  # anonymous admins and channel posts speak as a chat
        return str(message.sender_chat.id), message.sender_chat.title or ""
    if message.from_user is not None:
        return str(message.from_user.id), message.from_user.full_name
    return str(message.chat.id), message.chat.title or ""


def _from_another_bot(message: Message) -> bool:
    """Whether a bot account wrote `message`; an anonymous admin's message comes from a bot account
    (GroupAnonymousBot) too, but speaks as the chat (`sender_chat`), and a person wrote it."""
    return message.sender_chat is None and message.from_user is not None and message.from_user.is_bot


def _reply(message: Message, bot_id: int) -> tuple[str | None, Segment | None, bool]:
    replied = message.reply_to_message
    if replied is None or (message.is_topic_message and replied.forum_topic_created is not None):
        return None, None, False
    quoted = replied.text or replied.caption or ""
    target = str(replied.message_id)
    to_bot = replied.from_user is not None and replied.from_user.id == bot_id
    return (
        target,
        Segment(SegmentKind.REPLY, truncate(quoted, _QUOTE_CHARS) if quoted else "", target),
        to_bot,
    )


def _text_segments(
    text: str, entities: list[MessageEntity], bot_id: int, bot_username: str | None
) -> tuple[Segment, ...]:
    if not text:
        return ()
    cut = _utf16_cutter(text)
    units = len(text.encode("utf-16-le", "surrogatepass")) // 2
    segments: list[Segment] = []
    pos = 0
    for entity in sorted(entities, key=lambda e: e.offset):
        if entity.type not in ("mention", "text_mention") or entity.offset < pos:
            continue
        if entity.offset > pos:
            segments.append(Segment(SegmentKind.TEXT, cut(pos, entity.offset)))
        shown = cut(entity.offset, entity.offset + entity.length)
        if entity.type == "text_mention" and entity.user is not None:
            target = str(entity.user.id)
        elif bot_username and shown.lower() == f"@{bot_username.lower()}":
            target = str(bot_id)
        else:
            target = shown
        segments.append(Segment(SegmentKind.MENTION, shown, target))
        pos = entity.offset + entity.length
    if pos < units:
        segments.append(Segment(SegmentKind.TEXT, cut(pos, units)))
    return tuple(segments)


def _utf16_cutter(text: str) -> Callable[[int, int], str]:
    """`cut(start, end)`: the part of `text` between two UTF-16 offsets (as Telegram's entities count).

    A lone surrogate in `text` (JSON can escape one) is carried through, for `ChatMessage` to drop,
    instead of failing the whole message; a cut inside a surrogate pair shows U+FFFD."""
    units = text.encode("utf-16-le", "surrogatepass")

    def cut(start: int, end: int) -> str:
        return units[start * 2 : end * 2].decode("utf-16-le", errors="replace")

    return cut


def _media(message: Message) -> tuple[Segment, ...]:
    found: list[tuple[SegmentKind, str, Any]] = []
    if message.photo:
        found.append((SegmentKind.IMAGE, "[image]", message.photo[-1].file_id))
    if message.sticker is not None:
        emoji = message.sticker.emoji
        found.append(
            (SegmentKind.FACE, f"[sticker {emoji}]" if emoji else "[sticker]", message.sticker.file_id)
        )
    if message.animation is not None:
        found.append((SegmentKind.IMAGE, "[gif]", message.animation.file_id))
    elif message.document is not None:
        name = message.document.file_name
        found.append((SegmentKind.FILE, f"[file: {name}]" if name else "[file]", message.document.file_id))
    for attr, label in (
        ("video", "[video]"),
        ("video_note", "[video]"),
        ("voice", "[voice]"),
        ("audio", "[audio]"),
    ):
        item = getattr(message, attr)
        if item is not None:
            found.append((SegmentKind.OTHER, label, item.file_id))
    if message.poll is not None:
        found.append((SegmentKind.OTHER, f"[poll: {message.poll.question}]", None))
    if message.location is not None or message.venue is not None:
        found.append((SegmentKind.OTHER, "[location]", None))
    if message.contact is not None:
        found.append((SegmentKind.OTHER, "[contact]", None))
    if message.dice is not None:
        found.append((SegmentKind.OTHER, f"[dice {message.dice.emoji}]", None))
    for attr, label in (
        ("game", "[game: {}]"),
        ("invoice", "[invoice: {}]"),
        ("checklist", "[checklist: {}]"),
        ("story", "[story]"),
        ("paid_media", "[paid media]"),
        ("giveaway", "[giveaway]"),
        ("giveaway_winners", "[giveaway winners]"),
    ):
        item = getattr(message, attr, None)
        if item is not None:
            found.append((SegmentKind.OTHER, label.format(getattr(item, "title", "")), None))
    return tuple(Segment(kind, text, target) for kind, text, target in found)
