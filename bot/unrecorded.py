"""Messages the live bot could not store before it stopped (another process held the database past its
busy timeout as the bot shut down): a live adapter cannot fetch them again, so each is appended to
`<data_dir>/unrecorded.jsonl` and stored at the next `qunyi run`, before any new message."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any

from memory.service import MemoryService
from memory.types import ChatKind, ChatMessage, Segment

log = logging.getLogger(__name__)

FILE_NAME = "unrecorded.jsonl"


def to_line(message: ChatMessage, searchable: bool) -> str:
    """One JSON line holding every field of `message` (and whether it is searchable)."""
    data: dict[str, Any] = {f.name: getattr(message, f.name) for f in fields(message)}
    data["time"] = message.time.isoformat()
    data["chat_kind"] = message.chat_kind.value
    data["mentions"] = list(message.mentions)
    data["segments"] = [s.to_json() for s in message.segments]
    return json.dumps({"message": data, "searchable": searchable}, ensure_ascii=False) + "\n"


def from_line(line: str) -> tuple[ChatMessage, bool]:
    """The message and searchable flag of a line `to_line` wrote; ValueError (or KeyError, TypeError)
    when the line is not one."""
    kept = json.loads(line)
    data = dict(kept["message"])
    data["time"] = datetime.fromisoformat(data["time"])
    data["chat_kind"] = ChatKind(data["chat_kind"])
    data["mentions"] = tuple(data["mentions"])
    data["segments"] = tuple(Segment.from_json(s) for s in data["segments"])
    return ChatMessage(**data), bool(kept["searchable"])


def waiting(data_dir: Path) -> int:
    """How many kept messages wait in `data_dir` for the next `qunyi run` (0 when none)."""
    path = data_dir / FILE_NAME
    if not path.is_file():
        return 0
    with path.open(encoding="utf-8", errors="replace") as kept:
        return sum(1 for line in kept if line.strip())


def keep(data_dir: Path, message: ChatMessage, searchable: bool) -> Path:
    """Append `message` to the data directory's file of unrecorded messages, on disk before returning."""
    path = data_dir / FILE_NAME
    with path.open("a", encoding="utf-8") as out:
        out.write(to_line(message, searchable))
        out.flush()
        os.fsync(out.fileno())
    return path


async def record_kept(memory: MemoryService, data_dir: Path) -> int:
    """Store the messages kept by an earlier run, in the order they came, then remove the file; returns
    how many lines it held. Storing is idempotent, so a run stopped halfway stores them again whole.
    A line that is no kept message (cut short by a crash) is logged with its text and left out."""
    path = data_dir / FILE_NAME
    if not path.exists():
        return 0
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for number, line in enumerate(lines, 1):
        try:
            message, searchable = from_line(line)
        except (ValueError, KeyError, TypeError) as exc:
            log.error("%s line %d is no kept message (%s), left out: %s", path, number, exc, line)
            continue
        await memory.record(message, searchable)
    path.unlink()
    log.warning("stored %d messages the bot could not store before it last stopped (%s)", len(lines), path)
    return len(lines)
