"""Telegram Desktop's JSON export (`result.json`): one chat, or the full account export with `chats.list`
(and `left_chats.list`, the groups and channels the account has left).

Ids are mapped to what the Bot API uses, so imported history and live messages meet in the same chat and
person: supergroups and channels get the `-100` prefix, basic groups a `-`, users (`from_id: "user42"`)
their bare number. Members leaving (`remove_members`) and joining (`invite_members`, `join_group_by_link`,
`join_group_by_request`) become membership changes (memory.membership); other service messages (pins,
title changes) are reported as skipped. A forward
(`forwarded_from`) is imported as one (`ChatMessage.forwarded`), its @s addressing no one, as live.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

from adapters.importers.base import (
    ImportFileError,
    ImportIssue,
    MessageIterator,
    Progress,
    addressing,
    convert_entries,
    parse_time,
)
from adapters.importers.json_stream import EntryReader, MessageArray, read_outline, stream
from adapters.neutral import addressing_no_one, as_id, joined_text, mention_targets, reply_prefix
from memory.types import (
    ChatKind,
    ChatMessage,
    InvalidMessage,
    MembershipChange,
    Segment,
    SegmentKind,
    clean_name_field,
)

PLATFORM = "telegram"
# Where the message arrays are (a single chat's, or each listed chat's), and the top-level keys needed.
_ARRAYS = ("messages", "chats.list.item.messages", "left_chats.list.item.messages")
_KEEP = ("name", "type", "id", "messages", "chats", "left_chats")

# Telegram Desktop's dialog types; the account's own service chats (Replies, the login codes) are private.
_KINDS = {
    "personal_chat": ChatKind.PRIVATE,
    "bot_chat": ChatKind.PRIVATE,
    "saved_messages": ChatKind.PRIVATE,
    "replies": ChatKind.PRIVATE,
    "verification_codes": ChatKind.PRIVATE,
    "private_group": ChatKind.GROUP,
    "private_supergroup": ChatKind.GROUP,
    "public_supergroup": ChatKind.GROUP,
    "private_channel": ChatKind.CHANNEL,
    "public_channel": ChatKind.CHANNEL,
}
_MEDIA = {
    "sticker": (SegmentKind.FACE, "[sticker]"),
    "voice_message": (SegmentKind.OTHER, "[voice]"),
    "audio_file": (SegmentKind.OTHER, "[audio]"),
    "video_file": (SegmentKind.OTHER, "[video]"),
    "video_message": (SegmentKind.OTHER, "[video]"),
    "animation": (SegmentKind.IMAGE, "[gif]"),
}


def iter_messages(
    path: str | Path,
    *,
    tz: tzinfo = UTC,
    bot_id: str | None = None,
    progress: Progress | None = None,
) -> MessageIterator:
    """Yield the export's messages and an `ImportIssue` for every entry not imported.

    `tz` is used only for old exports without `date_unixtime` (`date` is the exporting machine's local
    time). `bot_id` marks the bot's own messages, and @s of and replies to it, as in the live adapter.
    """
    path = Path(path)
    outline = read_outline(path, _ARRAYS, _KEEP)
    chats = _chats(outline.root, path)
    total = sum(m.count for _, c in chats if isinstance(m := c.get("messages"), MessageArray))

    def read(reader: EntryReader) -> MessageIterator:
        done = 0
        for where, chat in chats:
            messages = chat.get("messages")
            if not isinstance(messages, MessageArray):
                yield ImportIssue(str(path), where, "chat has no 'messages' list")
                continue
            try:
                chat_id, kind = _chat_id(chat)
            except ValueError as exc:  # one issue for the chat, saying how many messages it holds
                reason = f"{exc}: none of its {messages.count} messages is imported"
                yield ImportIssue(str(path), where.removesuffix(".") or "the chat", reason)
                done += messages.count
                continue
            chat_name = _name(chat.get("name"))
            names: dict[str, set[str]] = {}  # the ids each name wrote under in this chat, so far

            def convert(
                entry: Any,
                senders: dict[str, str],
                chat_id: str = chat_id,
                kind: ChatKind = kind,
                chat_name: str = chat_name,
                names: dict[str, set[str]] = names,
            ) -> ChatMessage | list[MembershipChange] | str:
                if _is_membership(entry):
                    return _membership(entry, chat_id, tz, bot_id, names)
                item = _convert(entry, chat_id, kind, chat_name, tz, bot_id, senders)
                if isinstance(item, ChatMessage):
                    names.setdefault(item.sender_name, set()).add(item.sender_id)
                return item

            entries = reader.entries(messages, where)
            yield from convert_entries(path, entries, where, convert, progress, done, total)
            done += messages.count

    yield from stream(outline, read)


def _chats(root: Any, path: Path) -> list[tuple[str, Mapping[str, Any]]]:
    """The export's chats with their locations: the export itself, or `chats.list` then `left_chats.list`."""
    if isinstance(root, Mapping) and isinstance(root.get("messages"), MessageArray):
        return [("", root)]
    if not isinstance(root, Mapping) or not isinstance(_listing(root, "chats"), list):
        raise ImportFileError(f"{path}: not a Telegram Desktop export (no 'messages' and no 'chats.list')")
    return [
        (f"{key}.list[{i}].", chat)
        for key in ("chats", "left_chats")
        for i, chat in enumerate(_listing(root, key) or [])
        if isinstance(chat, Mapping)
    ]


def _listing(root: Mapping[str, Any], key: str) -> list[Any] | None:
    """`root[key]["list"]` when it is a list (the full export's `chats` and `left_chats`)."""
    section = root.get(key)
    chats = section.get("list") if isinstance(section, Mapping) else None
    return chats if isinstance(chats, list) else None


def _chat_id(chat: Mapping[str, Any]) -> tuple[str, ChatKind]:
    """The chat's Bot API id and kind; raises ValueError for an id that cannot be one."""
    raw = chat.get("id")
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ValueError(f"chat id must be an integer, got {raw!r}")
    kind_name = str(chat.get("type") or "")
    kind = _KINDS.get(kind_name)
    if kind is None:  # a type this importer does not know: its id as written, a group's when negative
        # (the Bot API's), else kept private: a private talk taken for a group would be read by others
        return str(raw), ChatKind.GROUP if raw < 0 else ChatKind.PRIVATE
    if kind_name.endswith(("supergroup", "channel")):
        prefix = "-100"
    elif kind_name == "private_group":
        prefix = "-"
    else:
        prefix = ""
    if raw >= 0:  # what Telegram Desktop writes: the bare id
        return f"{prefix}{raw}", kind
    # an export written by another tool may hold the Bot API id already; prefixing it again never matches
    text = str(raw)
    if prefix and text.startswith(prefix) and len(text) > len(prefix):
        return text, kind
    form = f"{prefix}…" if prefix else "positive"
    raise ValueError(f"chat id {raw} is negative but not the Bot API id of a {kind_name} ({form})")


def _peer_id(value: Any) -> str | None:
    """`user123` -> `123`, `channel123` -> `-100123`, `chat123` -> `-123`."""
    text = as_id(value)
    if text is None:
        return None
    for prefix, mapped in (("user", ""), ("channel", "-100"), ("chat", "-")):
        if text.startswith(prefix) and text[len(prefix) :].isdigit():
            return mapped + text[len(prefix) :]
    return text


def _convert(
    entry: Any,
    chat_id: str,
    kind: ChatKind,
    chat_name: str,
    tz: tzinfo,
    bot_id: str | None,
    senders: Mapping[str, str],
) -> ChatMessage | str:
    """The message, or a string saying why a well-formed entry is skipped; raises ValueError if broken."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"a message must be a JSON object, got {type(entry).__name__}")
    if entry.get("type") == "service":
        return f"service message: {entry.get('action') or 'unknown action'}"
    if entry.get("type") not in ("message", None):
        return f"unknown entry type {entry.get('type')!r}"
    message_id = as_id(entry.get("id"))
    if message_id is None:
        raise ValueError("message has no id")
    when = _entry_time(entry, tz)
    sender_id = _peer_id(entry.get("from_id"))
    if sender_id is None:
        raise ValueError("message has no from_id")
    media = _media(entry)
    words = _text_segments(entry.get("text_entities", entry.get("text", "")))
    # Telegram Desktop writes `forwarded_from` (the origin's name, null when hidden) only on a forward.
    forwarded = "forwarded_from" in entry
    if forwarded:  # as the live adapter: its @s were written elsewhere, to someone else
        words = addressing_no_one(words)
    if not media and not words:
        return "empty message (no text and no media)"
    mentions = mention_targets(words)
    reply_to = as_id(entry.get("reply_to_message_id"))
    is_bot, to_bot = addressing(sender_id, mentions, reply_to, bot_id, senders)
    try:
        return ChatMessage(
            platform=PLATFORM,
            chat_id=chat_id,
            message_id=message_id,
            sender_id=sender_id,
            text=joined_text(media, words),
            time=when,
            sender_name=_name(entry.get("from")),
            chat_name=chat_name,
            chat_kind=kind,
            reply_to=reply_to,
            mentions=mentions,
            segments=reply_prefix(reply_to) + media + words,
            is_bot=is_bot,
            to_bot=to_bot,
            forwarded=forwarded,
        )
    except InvalidMessage as exc:
        raise ValueError(f"invalid message: {exc}") from exc


# service actions naming members who left or joined: (joined, whether `members` lists them, else the actor)
_MEMBERSHIP_ACTIONS = {
    "remove_members": (False, True),
    "invite_members": (True, True),
    "join_group_by_link": (True, False),
    "join_group_by_request": (True, False),
}


def _is_membership(entry: Any) -> bool:
    """Whether `entry` is a service message of members leaving or joining (`_MEMBERSHIP_ACTIONS`)."""
    return (
        isinstance(entry, Mapping)
        and entry.get("type") == "service"
        and isinstance(action := entry.get("action"), str)
        and action in _MEMBERSHIP_ACTIONS
    )


def _membership(
    entry: Mapping[str, Any], chat_id: str, tz: tzinfo, bot_id: str | None, names: Mapping[str, set[str]]
) -> list[MembershipChange] | str:
    """The members a service entry says left (`remove_members`: the actor removing themselves, or
    others) or joined the chat. The export names the members of `members` by name alone: a name is the
    actor's own (its `actor_id`), else the one account that wrote in this chat under it before; a
    name not known so is passed over. The bot's own account is left out. Raises ValueError if broken."""
    action = str(entry.get("action"))
    joined, listed = _MEMBERSHIP_ACTIONS[action]
    when = _entry_time(entry, tz)
    actor, actor_id = clean_name_field(_name(entry.get("actor"))), _peer_id(entry.get("actor_id"))
    if not listed:
        ids = [actor_id] if actor_id is not None else []
    else:
        members = entry.get("members")
        if not isinstance(members, list):
            raise ValueError(f"{action} without a list of members")
        ids = []
        for name in (clean_name_field(_name(m)) for m in members):
            known = {actor_id} if actor_id is not None and name == actor else names.get(name, set())
            if name and len(known) == 1:
                ids.append(next(iter(known)))
    ids = [i for i in dict.fromkeys(ids) if i != bot_id]
    if not ids:
        return f"service message: {action} (no account known by the names it gives)"
    try:
        return [MembershipChange(PLATFORM, (chat_id,), user, when, joined=joined) for user in ids]
    except InvalidMessage as exc:
        raise ValueError(f"invalid {action}: {exc}") from exc


def _entry_time(entry: Mapping[str, Any], tz: tzinfo) -> datetime:
    """An entry's time: `date_unixtime`, else (older exports) `date` in the zone `tz`."""
    return parse_time(
        entry["date_unixtime"] if "date_unixtime" in entry else entry.get("date"), default_tz=tz
    )


def _name(value: Any) -> str:
    """A name as written; anything but a string counts as no name (not Python's repr of it)."""
    return value if isinstance(value, str) else ""


def _text_segments(text: Any) -> tuple[Segment, ...]:
    """`text` is a plain string, or a list of strings and entity objects (`text_entities` is the list)."""
    if isinstance(text, str):
        return (Segment(SegmentKind.TEXT, text),) if text else ()
    if not isinstance(text, list):
        raise ValueError(f"text must be a string or a list, got {type(text).__name__}")
    segments: list[Segment] = []
    for part in text:
        if isinstance(part, str):
            if part:
                segments.append(Segment(SegmentKind.TEXT, part))
            continue
        if not isinstance(part, Mapping) or not isinstance(part.get("text"), str):
            raise ValueError(f"text entity without text: {part!r}")
        kind, value = part.get("type"), part["text"]
        if kind == "mention":  # "@username": no numeric id in the export
            segments.append(Segment(SegmentKind.MENTION, value, value))
        elif kind == "mention_name":
            segments.append(Segment(SegmentKind.MENTION, value, as_id(part.get("user_id"))))
        elif value:
            segments.append(Segment(SegmentKind.TEXT, value))
    return tuple(segments)


def _media(entry: Mapping[str, Any]) -> tuple[Segment, ...]:
    if "photo" in entry:
        return (Segment(SegmentKind.IMAGE, "[image]", _file_ref(entry["photo"])),)
    if "file" in entry or "media_type" in entry:
        media_type = str(entry.get("media_type") or "")
        kind, text = _MEDIA.get(media_type, (SegmentKind.FILE, "[file]"))
        if media_type == "sticker" and entry.get("sticker_emoji"):
            text = f"[sticker {entry['sticker_emoji']}]"
        elif kind is SegmentKind.FILE and entry.get("file_name"):
            text = f"[file: {entry['file_name']}]"
        return (Segment(kind, text, _file_ref(entry.get("file"))),)
    poll = entry.get("poll")
    if isinstance(poll, Mapping):
        return (Segment(SegmentKind.OTHER, f"[poll: {poll.get('question', '')}]"),)
    if "location_information" in entry:
        return (Segment(SegmentKind.OTHER, "[location]"),)
    if "contact_information" in entry:
        return (Segment(SegmentKind.OTHER, "[contact]"),)
    return ()


def _file_ref(value: Any) -> str | None:
    """A media path in the export folder; the "(File not included…)" notice is no reference."""
    return value if isinstance(value, str) and value and not value.startswith("(") else None
