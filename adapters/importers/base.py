"""What every importer yields besides messages: issues with a location, never silent skips."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from enum import StrEnum
from pathlib import Path
from typing import Any

from memory.types import ChatMessage

Progress = Callable[[int, int], None]
"""Called as `progress(done, total)` while an importer works (units: entries, or lines for text files)."""


class IssueKind(StrEnum):
    MALFORMED = "malformed"  # the entry is broken; fix the file to import it
    SKIPPED = "skipped"  # a well-formed entry that is no chat message (a join, a pin, an empty message)


@dataclass(frozen=True, slots=True)
class ImportIssue:
    """An entry an importer did not turn into a message, with where it is and why."""

    source: str
    location: str
    reason: str
    kind: IssueKind = IssueKind.MALFORMED

    def __str__(self) -> str:
        return f"{self.source}:{self.location}: {self.kind.value}: {self.reason}"


ImportItem = ChatMessage | ImportIssue
MessageIterator = Iterator[ImportItem]


class ImportFileError(ValueError):
    """The file as a whole cannot be read as the format (not JSON, wrong shape, unreadable)."""


def load_json(path: Path) -> Any:
    """Read a whole JSON file, raising `ImportFileError` with the position of a syntax error."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot read: {exc}") from exc
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ImportFileError(f"{path}: not UTF-8 text at byte {exc.start}") from exc
    except json.JSONDecodeError as exc:
        raise ImportFileError(
            f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc


_LONG_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(value: Any, *, default_tz: tzinfo | None = None) -> datetime:
    """Unix seconds (number or digit string) or ISO 8601 text as an aware datetime.

    ISO text without an offset takes `default_tz`; without one it is an error (never a guessed zone).
    Raises ValueError with the reason.
    """
    if isinstance(value, bool):
        raise ValueError(f"time must be ISO 8601 text or unix seconds, got {value!r}")
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise ValueError(f"unix time {value!r} is out of range") from exc
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"time must be ISO 8601 text or unix seconds, got {value!r}")
    text = _LONG_FRACTION.sub(r"\1", value.strip())  # .NET writes 7 fractional digits
    try:
        when = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"time {value!r} is not ISO 8601") from exc
    if when.tzinfo is None:
        if default_tz is None:
            raise ValueError(f"time {value!r} has no UTC offset")
        when = when.replace(tzinfo=default_tz)
    return when


def as_id(value: Any) -> str | None:
    """A platform id as a non-empty string (ints included), or None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None
