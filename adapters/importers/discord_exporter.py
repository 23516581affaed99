"""DiscordChatExporter's JSON export (one channel or thread per file).

The channel (or thread) id is the chat, as in the live adapter. `content` already shows mentions as
`@name`; the `mentions` list gives their ids. A bot's answers to slash and context-menu commands are
messages like the others; system entries (joins, pins, thread creation, calls) are reported as skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.importers.base import (
    ImportFileError,
    MessageIterator,
    Progress,
    addressing,
    convert_entries,
    parse_time,
)
from adapters.importers.json_stream import EntryReader, MessageArray, read_outline, stream
from adapters.neutral import as_id, joined_text, mapping_at, reply_prefix
from memory.types import ChatKind, ChatMessage, InvalidMessage, Segment, SegmentKind

PLATFORM = "discord"
# Direct messages, one-to-one or a group DM outside any server: private chats, as the live adapter's DMs.
_DIRECT = frozenset({"DirectTextChat", "DirectGroupTextChat"})
# The exporter writes `type` as its MessageKind enum's name, and a kind its enum does not name as the
# bare number: its enum (Tyrrrz/DiscordChatExporter, Core/Discord/Data/MessageKind.cs) long ended at
# Reply (19), so a bot's answer to a slash command (Discord type 20, CHAT_INPUT_COMMAND) or to a
# context-menu command (23, CONTEXT_MENU_COMMAND) came out "20" and "23"; a version naming them writes
# Discord's names. These kinds are words someone wrote; every other kind, named or a number (joins,
# pins, calls, renames, thread creation, a thread's starter, which only points at a message of the
# parent channel, boosts, kinds newer than this list), is a system entry and reported as skipped.
_MESSAGE_TYPES = frozenset(
    {"Default", "0", "Reply", "19", "ChatInputCommand", "20", "ContextMenuCommand", "23"}
)
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")


def iter_messages(
    path: str | Path, *, bot_id: str | None = None, progress: Progress | None = None
) -> MessageIterator:
    """Yield the export's messages and an `ImportIssue` for every entry not imported.

    `bot_id` marks the bot's own messages, and mentions of and replies to it, as in the live adapter.
    """
    path = Path(path)
    outline = read_outline(path, arrays=["messages"], keep=["channel", "messages"])
    root = outline.root
    messages = root.get("messages") if isinstance(root, Mapping) else None
    if not isinstance(messages, MessageArray):
        raise ImportFileError(f"{path}: not a DiscordChatExporter JSON export (no 'messages' list)")
    channel = mapping_at(root, "channel")
    chat_id = as_id(channel.get("id"))
    if chat_id is None:
        raise ImportFileError(f"{path}: the export has no channel id")
    channel_type = str(channel.get("type") or "")
    kind = ChatKind.PRIVATE if channel_type in _DIRECT else ChatKind.GROUP
    chat_name = str(channel.get("name") or "")

    def convert(entry: Any, senders: dict[str, str]) -> ChatMessage | str:
        return _convert(entry, chat_id, kind, chat_name, bot_id, senders)

    def read(reader: EntryReader) -> MessageIterator:
        entries = reader.entries(messages, "")
        return convert_entries(path, entries, "", convert, progress, 0, messages.count)

    yield from stream(outline, read)


def _convert(
    entry: Any, chat_id: str, kind: ChatKind, chat_name: str, bot_id: str | None, senders: Mapping[str, str]
) -> ChatMessage | str:
    if not isinstance(entry, Mapping):
        raise ValueError(f"a message must be a JSON object, got {type(entry).__name__}")
    entry_type = str(entry.get("type") or "Default")
    if entry_type not in _MESSAGE_TYPES:
        return f"system message: {entry_type}"
    message_id = as_id(entry.get("id"))
    if message_id is None:
        raise ValueError("message has no id")
    author = entry.get("author")
    if not isinstance(author, Mapping) or as_id(author.get("id")) is None:
        raise ValueError("message has no author id")
    sender_id = str(as_id(author.get("id")))
    name = str(author.get("name") or "")
    nickname = str(author.get("nickname") or "")
    content = entry.get("content") or ""
    if not isinstance(content, str):
        raise ValueError(f"content must be a string, got {type(content).__name__}")
    media = _media(entry)
    words = (Segment(SegmentKind.TEXT, content),) if content else ()
    if not media and not words:
        return "empty message (no content, attachments or stickers)"
    mentions = tuple(
        dict.fromkeys(
            i
            for i in (as_id(m.get("id")) for m in entry.get("mentions") or [] if isinstance(m, Mapping))
            if i
        )
    )
    reference = mapping_at(entry, "reference")
    reply_to = as_id(reference.get("messageId"))
    is_bot, to_bot = addressing(sender_id, mentions, reply_to, bot_id, senders)
    try:
        return ChatMessage(
            platform=PLATFORM,
            chat_id=chat_id,
            message_id=message_id,
            sender_id=sender_id,
            text=joined_text(words, media),
            time=parse_time(entry.get("timestamp")),
            sender_name=name,
            sender_card=nickname if nickname != name else "",
            chat_name=chat_name,
            chat_kind=kind,
            reply_to=reply_to,
            mentions=mentions,
            segments=reply_prefix(reply_to) + words + media,
            is_bot=is_bot,
            to_bot=to_bot,
        )
    except InvalidMessage as exc:
        raise ValueError(f"invalid message: {exc}") from exc


def _media(entry: Mapping[str, Any]) -> tuple[Segment, ...]:
    segments: list[Segment] = []
    for attachment in entry.get("attachments") or []:
        if not isinstance(attachment, Mapping):
            continue
        file_name = str(attachment.get("fileName") or "")
        url = as_id(attachment.get("url"))
        if file_name.lower().endswith(_IMAGE_SUFFIXES):
            segments.append(Segment(SegmentKind.IMAGE, "[image]", url))
        else:
            segments.append(Segment(SegmentKind.FILE, f"[file: {file_name}]" if file_name else "[file]", url))
    for sticker in entry.get("stickers") or []:
        if isinstance(sticker, Mapping):
            segments.append(
                Segment(
                    SegmentKind.FACE,
                    f"[sticker {sticker.get('name', '')}]".replace(" ]", "]"),
                    as_id(sticker.get("id")),
                )
            )
    if not segments and not entry.get("content") and entry.get("embeds"):
        segments.append(Segment(SegmentKind.OTHER, "[embed]"))
    return tuple(segments)
