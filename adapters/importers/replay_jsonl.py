"""The replay log: one JSON message per line (the `qunyi replay` contract).

`{"chat": "g1", "chat_name": "…", "message_id": "m1", "sender_id": "u1", "sender_name": "…",
"sender_card": "…", "time": "2026-03-01T20:15:00+08:00" or unix seconds, "text": "…",
"reply_to": "m0", "mentions": ["u2"]}` — chat_name, sender_card, reply_to, mentions optional.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adapters.importers.problems import ParseProblem
from memory.types import ChatMessage, InvalidMessage

REQUIRED = ("chat", "message_id", "sender_id", "time", "text")


def parse_time(value: Any) -> datetime:
    if isinstance(value, bool):
        raise ValueError("time must be ISO 8601 or unix seconds")
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), UTC)
    if isinstance(value, str):
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise ValueError("time must be ISO 8601 or unix seconds")


def _text(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    if value is None:
        return ""
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"{key} must be a string")


def parse_record(record: Any, platform: str, bot_id: str | None) -> ChatMessage:
    if not isinstance(record, dict):
        raise ValueError("a line must be a JSON object")
    missing = [key for key in REQUIRED if key not in record]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    mentions = record.get("mentions") or []
    if not isinstance(mentions, list):
        raise ValueError("mentions must be a list of user ids")
    sender = _text(record, "sender_id")
    reply_to = record.get("reply_to")
    return ChatMessage(
        platform=platform,
        chat_id=_text(record, "chat"),
        message_id=_text(record, "message_id"),
        sender_id=sender,
        sender_name=_text(record, "sender_name"),
        sender_card=_text(record, "sender_card"),
        chat_name=_text(record, "chat_name"),
        text=_text(record, "text"),
        time=parse_time(record["time"]),
        reply_to=None if reply_to in (None, "") else str(reply_to),
        mentions=tuple(str(m) for m in mentions),
        is_bot=bot_id is not None and sender == bot_id,
        to_bot=bot_id is not None and bot_id in {str(m) for m in mentions},
    )


def iter_messages(
    path: Path, platform: str = "replay", bot_id: str | None = None
) -> Iterator[ChatMessage | ParseProblem]:
    """Each line as a ChatMessage, or a ParseProblem naming the line number."""
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield parse_record(json.loads(line), platform, bot_id)
            except (json.JSONDecodeError, ValueError, InvalidMessage, TypeError) as exc:
                yield ParseProblem(f"{path.name}:{number}", str(exc))
