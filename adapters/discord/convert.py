"""discord.py `Message` → neutral `ChatMessage`. Reads the objects' attributes; imports no discord.py.

A guild text channel and each thread are separate chats (their ids differ). Raw mention markup
(`<@id>`, `<@&role>`, `<#channel>`, `<:emoji:id>`) is rendered the way the client shows it, with user
mentions kept as MENTION segments targeting the user id. A mention of the bot's own role (the one
Discord makes for it, offered next to the bot when members type `@`) counts as a mention of the bot.
A forwarded message keeps the text and media of the message it forwards (its mentions address no one,
and it never runs a command);
a poll is kept as `[poll: question]`, and a message that holds (or forwards) nothing but embeds as
`[embed]`. A bot's answer to a slash or app command is a message like the others.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from adapters.neutral import addressing_no_one, holds_nothing, joined_text, mention_targets
from memory.text import truncate
from memory.types import ChatKind, ChatMessage, Segment, SegmentKind

if TYPE_CHECKING:
    from discord import Message

PLATFORM = "discord"
_QUOTE_CHARS = 60
_MARKUP = re.compile(r"<@!?(?P<user>\d+)>|<@&(?P<role>\d+)>|<#(?P<channel>\d+)>|<a?:(?P<emoji>\w+):\d+>")
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")
# a bot's answer to a slash command or an app (context-menu) command is said like any other message
_CHAT_MESSAGE_TYPES = ("default", "reply", "chat_input_command", "context_menu_command")


def message_to_chat(message: Message, *, bot_id: int) -> ChatMessage | None:
    """The neutral form of `message`, or None for system messages (joins, pins, thread starts…) and
    for one that holds nothing (`holds_nothing`: its text only control characters, say)."""
    if getattr(message.type, "name", str(message.type)) not in _CHAT_MESSAGE_TYPES:
        return None
    words = _content_segments(message, message.content or "", bot_id)
    mentions = mention_targets(words)
    media = _media(message)
    snapshots = getattr(message, "message_snapshots", None) or ()  # a forward
    for snapshot in snapshots:
        forwarded = _content_segments(message, snapshot.content or "", bot_id)
        words += addressing_no_one(forwarded)
        media += _media(snapshot)
    poll = getattr(message, "poll", None)
    if poll is not None:
        media += (Segment(SegmentKind.OTHER, f"[poll: {poll.question}]"),)
    if not words and not media and (message.embeds or any(s.embeds for s in snapshots)):
        media = (Segment(SegmentKind.OTHER, "[embed]"),)
    if not words and not media:
        return None
    author = message.author
    channel = message.channel
    is_private = str(getattr(channel, "type", "")) == "private"
    reply_to, reply_segment, replied_to_bot = _reply(message, bot_id)
    is_bot = author.id == bot_id
    to_bot = not is_bot and (is_private or str(bot_id) in mentions or replied_to_bot)
    text = joined_text(words, media)
    converted = ChatMessage(
        platform=PLATFORM,
        chat_id=str(channel.id),
        message_id=str(message.id),
        sender_id=str(author.id),
        text=text,
        time=message.created_at,
        sender_name=author.global_name or author.name,
        sender_card=getattr(author, "nick", None) or "",
        chat_name=_chat_name(channel),
        chat_kind=ChatKind.PRIVATE if is_private else ChatKind.GROUP,
        reply_to=reply_to,
        mentions=mentions,
        segments=((reply_segment,) if reply_segment else ()) + words + media,
        is_bot=is_bot,
        to_bot=to_bot,
        from_bot=not is_bot and bool(getattr(author, "bot", False)),  # webhooks included
        forwarded=bool(snapshots),
    )
    return None if holds_nothing(converted.text) else converted


def _chat_name(channel: Any) -> str:
    name = getattr(channel, "name", None)
    if name:
        return str(name)
    recipient = getattr(channel, "recipient", None)  # a DM
    return str(getattr(recipient, "display_name", "") or "") if recipient else ""


def _display(user: Any) -> str:
    return str(getattr(user, "display_name", None) or getattr(user, "name", "") or "")


def _content_segments(message: Message, content: str, bot_id: int) -> tuple[Segment, ...]:
    """`content` (the message's own, or a forwarded one) as segments, markup rendered via `message`."""
    users = {str(u.id): u for u in message.mentions}
    roles = {str(r.id): r for r in message.role_mentions}
    channels = {str(c.id): c.name for c in message.channel_mentions}
    segments: list[Segment] = []
    pos = 0
    for match in _MARKUP.finditer(content):
        if match.start() > pos:
            segments.append(Segment(SegmentKind.TEXT, content[pos : match.start()]))
        if match.group("user"):
            uid = match.group("user")
            name = _display(users[uid]) if uid in users else uid
            segments.append(Segment(SegmentKind.MENTION, f"@{name}", uid))
        elif match.group("role"):
            segments.append(_role_segment(message, roles, match.group("role"), bot_id))
        elif match.group("channel"):
            segments.append(
                Segment(SegmentKind.TEXT, f"#{_channel_name(message, channels, match.group('channel'))}")
            )
        else:
            segments.append(Segment(SegmentKind.FACE, f":{match.group('emoji')}:"))
        pos = match.end()
    if pos < len(content):
        segments.append(Segment(SegmentKind.TEXT, content[pos:]))
    return tuple(segments)


def _role_segment(message: Message, mentioned: dict[str, Any], role_id: str, bot_id: int) -> Segment:
    """`@role` as text, or a MENTION of the bot when the role is the one Discord manages for it."""
    role = mentioned.get(role_id)
    if role is None and message.guild is not None:
        role = message.guild.get_role(int(role_id))
    name = str(getattr(role, "name", None) or "role")
    if getattr(getattr(role, "tags", None), "bot_id", None) == bot_id:
        return Segment(SegmentKind.MENTION, f"@{name}", str(bot_id))
    return Segment(SegmentKind.TEXT, f"@{name}")


def _channel_name(message: Message, mentioned: dict[str, str], channel_id: str) -> str:
    if channel_id in mentioned:
        return mentioned[channel_id]
    guild = message.guild
    found = guild.get_channel_or_thread(int(channel_id)) if guild is not None else None
    return str(getattr(found, "name", None) or "channel")


def _media(source: Any) -> tuple[Segment, ...]:
    """The attachments and stickers of `source`: the message itself or a message it forwards."""
    segments: list[Segment] = []
    for attachment in source.attachments:
        content_type = attachment.content_type or ""
        if content_type.startswith("image/") or attachment.filename.lower().endswith(_IMAGE_SUFFIXES):
            segments.append(Segment(SegmentKind.IMAGE, "[image]", attachment.url))
        else:
            segments.append(Segment(SegmentKind.FILE, f"[file: {attachment.filename}]", attachment.url))
    for sticker in source.stickers:
        segments.append(Segment(SegmentKind.FACE, f"[sticker {sticker.name}]", str(sticker.id)))
    return tuple(segments)


def _reply(message: Message, bot_id: int) -> tuple[str | None, Segment | None, bool]:
    reference = message.reference
    if reference is None or reference.message_id is None or _is_forward(reference):
        return None, None, False
    target = str(reference.message_id)
    resolved = reference.resolved
    author = getattr(resolved, "author", None)  # None when not fetched, or a DeletedReferencedMessage
    quoted = getattr(resolved, "content", "") or ""
    segment = Segment(SegmentKind.REPLY, truncate(quoted, _QUOTE_CHARS) if quoted else "", target)
    return target, segment, author is not None and author.id == bot_id


def _is_forward(reference: Any) -> bool:
    kind = getattr(reference, "type", None)
    return getattr(kind, "name", None) == "forward"
