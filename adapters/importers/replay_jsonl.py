"""The replay JSONL format: one message per line, the neutral interchange Qunyi reads and writes.

```
{"chat": "g1", "chat_name": "…", "message_id": "m1", "sender_id": "u1", "sender_name": "…",
 "sender_card": "…", "time": "2026-03-01T20:15:00+08:00", "text": "…", "reply_to": "m0", "mentions": ["u2"]}
```
`time` is ISO 8601 with an offset or unix seconds. `chat_name`, `sender_card`, `reply_to` and `mentions` are
optional, and so are `forwarded` (true: the message re-shares words written elsewhere; false when left
out) and `chat_kind` ("group" or "private"; a group when left out). Blank lines are ignored; any other
line that does not parse is reported with its line number.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import tzinfo
from pathlib import Path
from typing import Any

from adapters.importers.base import ImportFileError, ImportIssue, MessagesOnly, Progress, kept, parse_time
from adapters.neutral import as_id, chat_kind_named, forwarded_flag
from memory import untrusted_json
from memory.types import ChatKind, ChatMessage, InvalidMessage, Segment, SegmentKind

REQUIRED = ("chat", "message_id", "sender_id", "sender_name", "time", "text")
OPTIONAL_TEXT = ("chat_name", "sender_card")


def iter_messages(
    path: str | Path,
    *,
    platform: str = "replay",
    default_tz: tzinfo | None = None,
    progress: Progress | None = None,
) -> MessagesOnly:
    """Yield a `ChatMessage` per valid line and an `ImportIssue` per invalid one, in file order.

    `default_tz` applies to ISO times without an offset; without it such lines are reported.
    """
    path = Path(path)
    try:
        total = _count_lines(path) if progress is not None else 0
        with path.open("rb") as handle:  # line by line: a log of any size is read in constant memory
            for number, raw in enumerate(handle, start=1):
                if progress is not None:
                    progress(number, max(total, number))
                if not raw.strip():
                    continue
                try:
                    text = raw.removesuffix(b"\n").decode("utf-8-sig" if number == 1 else "utf-8")
                    yield kept(parse_record(text, platform, default_tz), str(path), f"line {number}")
                except ValueError as exc:  # InvalidMessage, JSON and Unicode errors are ValueErrors
                    yield ImportIssue(str(path), f"line {number}", _reason(exc))
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot read: {exc}") from exc


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def parse_record(line: str, platform: str = "replay", default_tz: tzinfo | None = None) -> ChatMessage:
    """One JSONL line as a message; raises ValueError (or InvalidMessage) saying what is wrong."""
    record = untrusted_json.loads(line)
    if not isinstance(record, Mapping):
        raise ValueError(f"a line must hold a JSON object, got {type(record).__name__}")
    missing = [key for key in REQUIRED if key not in record]
    if missing:
        raise ValueError(f"missing field(s): {', '.join(missing)}")
    ids: dict[str, str] = {}
    for key in ("chat", "message_id", "sender_id"):
        value = as_id(record[key])
        if value is None:
            raise ValueError(f"{key} must be a non-empty string or an integer, got {record[key]!r}")
        ids[key] = value
    text = _string(record, "text")
    reply_to = record.get("reply_to")
    if reply_to is not None and as_id(reply_to) is None:
        raise ValueError(f"reply_to must be a message id, got {reply_to!r}")
    mentions = record.get("mentions") or []
    if not isinstance(mentions, list) or any(as_id(m) is None for m in mentions):
        raise ValueError(f"mentions must be a list of user ids, got {mentions!r}")
    forwarded, chat_kind = forwarded_flag(record), chat_kind_named(record)
    return ChatMessage(
        platform=platform,
        chat_id=ids["chat"],
        message_id=ids["message_id"],
        sender_id=ids["sender_id"],
        text=text,
        time=parse_time(record["time"], default_tz=default_tz),
        sender_name=_string(record, "sender_name"),
        sender_card=_string(record, "sender_card"),
        chat_name=_string(record, "chat_name"),
        reply_to=as_id(reply_to),
        mentions=tuple(str(as_id(m)) for m in mentions),
        segments=(Segment(SegmentKind.TEXT, text),) if text else (),
        forwarded=forwarded,
        chat_kind=chat_kind,
    )


def to_record(message: ChatMessage) -> dict[str, Any]:
    """The replay JSONL object for a message (the inverse of `parse_record`, optional keys left out)."""
    record: dict[str, Any] = {
        "chat": message.chat_id,
        "message_id": message.message_id,
        "sender_id": message.sender_id,
        "sender_name": message.sender_name,
        "time": message.time.isoformat(),
        "text": message.text,
    }
    if message.chat_name:
        record["chat_name"] = message.chat_name
    if message.sender_card:
        record["sender_card"] = message.sender_card
    if message.reply_to:
        record["reply_to"] = message.reply_to
    if message.mentions:
        record["mentions"] = list(message.mentions)
    if message.forwarded:
        record["forwarded"] = True
    if message.chat_kind is not ChatKind.GROUP:
        record["chat_kind"] = message.chat_kind.value
    return record


def _string(record: Mapping[str, Any], key: str) -> str:
    value = record.get(key)
    if value is None and key not in REQUIRED:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, got {value!r}")
    return value


def _reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 at byte {exc.start}"
    if isinstance(exc, InvalidMessage):
        return f"invalid message: {exc}"
    return str(exc)
