"""The JSON a browser posts to the playground → a checked `Post` → a neutral `ChatMessage`.

A post is `{"chat_id", "chat_kind", "user", "text", "reply_to", "forwarded"}` (`chat_kind` "group" by
default, `reply_to` optional, `forwarded` true to post a forward, as the platforms deliver one: words
re-shared from elsewhere, whose @s address no one). The sender id is derived from the user name, so the
same name is the same member in every chat and in every run. A name longer than the limit is refused
(cut, two names sharing their start would become one member), as is one holding a character that shows
nothing (names lose them); text and name lose control characters as every message does; ids holding
them are refused.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from adapters.base import mention_spans
from adapters.neutral import (
    addressing_no_one,
    chat_kind_named,
    forwarded_flag,
    holds_nothing,
    mention_targets,
    reply_prefix,
)
from memory import untrusted_json
from memory.text import drop_invisible, truncate
from memory.types import ChatKind, ChatMessage, Segment, SegmentKind, clean_text

PLATFORM = "playground"
MAX_ID_CHARS = 64
QUOTE_CHARS = 60
FIELDS = ("chat_id", "chat_kind", "user", "text", "reply_to", "forwarded")
DOT_SEGMENTS = (".", "..")  # a URL reads them as path steps, so /api/chats/../messages names no chat


class BadPost(ValueError):
    """A post the playground refuses; the message says which field is wrong and is sent back."""


@dataclass(frozen=True, slots=True)
class Post:
    """One message a person typed on the page, checked."""

    chat_id: str
    chat_kind: ChatKind
    user: str
    text: str
    reply_to: str | None = None
    forwarded: bool = False


def read_post(body: bytes, *, max_name_chars: int) -> Post:
    """The post in a request body (UTF-8 JSON); raises BadPost saying what is wrong with it."""
    return post_from_json(decode_body(body), max_name_chars=max_name_chars)


def decode_body(body: bytes) -> Any:
    """The JSON in a request body (UTF-8); raises BadPost when it is not UTF-8, empty or not JSON."""
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadPost(f"the body is not UTF-8 text (bad byte at {exc.start})") from None
    if not decoded.strip():
        raise BadPost("the body is empty; send a JSON object")
    try:
        return untrusted_json.loads(decoded)
    except json.JSONDecodeError as exc:
        raise BadPost(
            f"the body is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from None


def post_from_json(data: Any, *, max_name_chars: int) -> Post:
    """A `Post` from decoded JSON; raises BadPost for a missing, unknown or wrong field."""
    data = json_object(data, FIELDS)
    user = user_name(data, max_name_chars=max_name_chars)
    text = message_text(data)
    reply_to = data.get("reply_to")
    try:  # the replay format's checks: one message for both
        chat_kind, forwarded = chat_kind_named(data), forwarded_flag(data)
    except ValueError as exc:
        raise BadPost(str(exc)) from None
    return Post(
        chat_id=_id_field(data, "chat_id"),
        chat_kind=chat_kind,
        user=user,
        text=text,
        reply_to=None if reply_to is None else _id_field(data, "reply_to"),
        forwarded=forwarded,
    )


def json_object(data: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    """`data` when it is a JSON object holding no field but `fields`; raises BadPost otherwise."""
    if not isinstance(data, dict):
        raise BadPost(f"the body must be a JSON object, got {_json_type(data)}")
    unknown = sorted(str(key) for key in data if key not in fields)
    if unknown:
        raise BadPost(
            f"unknown fields {truncate(', '.join(unknown), 200)}; the fields are {', '.join(fields)}"
        )
    return data


def message_text(data: dict[str, Any]) -> str:
    """The `text` field without control characters; raises BadPost when missing or empty (nothing but
    blanks, control characters and characters that show nothing: `holds_nothing`)."""
    text = clean_text(_text_field(data, "text"))
    if holds_nothing(text):
        raise BadPost("text must not be empty")
    return text


def user_name(data: dict[str, Any], *, max_name_chars: int) -> str:
    """The `user` field: a name without control characters, blanks around it or a second encoding
    (NFC); raises BadPost when it is missing, blank, over `max_name_chars` characters or holds a
    character that shows nothing (memory drops those from names, `drop_invisible`: the member would be
    shown under another name than the one typed, and look like the member of that name)."""
    user = unicodedata.normalize("NFC", clean_text(_text_field(data, "user")).strip())
    if not user:
        raise BadPost("user must not be blank")
    if drop_invisible(user) != user:
        raise BadPost(
            "user must not hold characters that show nothing (a zero-width space or joiner, a "
            "bidirectional mark...): names lose them, so the name would be shown as another member's"
        )
    if len(user) > max_name_chars:
        raise BadPost(
            f"user is {len(user)} characters, over the limit of {max_name_chars} "
            "(names are not cut: two names sharing their start would be one member)"
        )
    return user


def sender_id(user: str) -> str:
    """The stable sender id of a user name: the same name always gives the same id."""
    return "pg-" + hashlib.sha256(user.encode("utf-8")).hexdigest()[:16]


def to_chat_message(
    post: Post,
    *,
    message_id: str,
    time: datetime,
    bot_id: str,
    bot_name: str,
    quoted: ChatMessage | None = None,
    members: Mapping[str, str] | None = None,
) -> ChatMessage:
    """The neutral message of `post`. A typed `@<name>` (or `＠`) of one of the chat's `members` (name
    -> sender id) mentions that member, as an @ does on the platforms; `@<bot name>` or `@<bot id>`
    mentions the bot and addresses it, as do a private chat and a reply to the bot (`quoted`, the
    message replied to). A forward's @s mention no one (`typed_mentions`)."""
    body, targets = typed_mentions(
        post.text, members or {}, bot_id=bot_id, bot_name=bot_name, forwarded=post.forwarded
    )
    replied_to_bot = quoted is not None and quoted.is_bot
    quote = truncate(quoted.text, QUOTE_CHARS) if quoted is not None else ""
    return ChatMessage(
        platform=PLATFORM,
        chat_id=post.chat_id,
        message_id=message_id,
        sender_id=sender_id(post.user),
        sender_name=post.user,
        chat_name=post.chat_id,
        chat_kind=post.chat_kind,
        text=post.text,
        time=time,
        reply_to=post.reply_to,
        mentions=targets,
        segments=(*reply_prefix(post.reply_to, quote), *body),
        to_bot=post.chat_kind is ChatKind.PRIVATE or bot_id in targets or replied_to_bot,
        forwarded=post.forwarded,
    )


def typed_mentions(
    text: str, members: Mapping[str, str], *, bot_id: str, bot_name: str, forwarded: bool = False
) -> tuple[tuple[Segment, ...], tuple[str, ...]]:
    """`text` as segments, and the ids it mentions: a MENTION segment for each typed @ of one of the
    chat's `members` (name -> sender id) or of the bot, by name or id (the bot wins over a member of
    its name; see `adapters.base.mention_spans`), TEXT segments for the rest. The text of a
    `forwarded` message mentions no one: its @s were written elsewhere, to someone else (as the
    platforms' forwards, `addressing_no_one`)."""
    handles = {**members, bot_name: bot_id, bot_id: bot_id}
    segments: list[Segment] = []
    done = 0
    for start, end, handle in mention_spans(text, handles):
        if start > done:
            segments.append(Segment(SegmentKind.TEXT, text[done:start]))
        segments.append(Segment(SegmentKind.MENTION, text[start:end], handles[handle]))
        done = end
    if done < len(text) or not segments:
        segments.append(Segment(SegmentKind.TEXT, text[done:]))
    if forwarded:
        return addressing_no_one(segments), ()
    return tuple(segments), mention_targets(segments)


def _text_field(data: dict[str, Any], name: str) -> str:
    if name not in data:
        raise BadPost(f"{name} is missing")
    value = data[name]
    if not isinstance(value, str):
        raise BadPost(f"{name} must be a string, got {_json_type(value)}")
    return value


def _id_field(data: dict[str, Any], name: str) -> str:
    value = _text_field(data, name).strip()
    if not value:
        raise BadPost(f"{name} must not be blank")
    if len(value) > MAX_ID_CHARS:
        raise BadPost(f"{name} is {len(value)} characters, over the limit of {MAX_ID_CHARS}")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in value):  # newlines and tabs too
        raise BadPost(f"{name} must not hold control characters or lone surrogates")
    if value in DOT_SEGMENTS:
        raise BadPost(f"{name} must not be '.' or '..': no address could read it back (a path step)")
    return value


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")
