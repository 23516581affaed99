"""What every importer yields besides messages: issues with a location, never silent skips."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from enum import StrEnum
from pathlib import Path
from typing import Any

from adapters.neutral import holds_nothing
from memory.types import ChatMessage, MembershipChange

Progress = Callable[[int, int], None]
"""Called as `progress(done, total)` while an importer works (units: entries, or lines for text files)."""


class IssueKind(StrEnum):
    MALFORMED = "malformed"  # the entry is broken; fix the file to import it
    SKIPPED = "skipped"  # a well-formed entry that is no chat message (a join, a pin, an empty message)
    FAILED = "failed"  # a message whose handling failed after it was read (the log has the traceback)


@dataclass(frozen=True, slots=True)
class ImportIssue:
    """An entry an importer did not turn into a message, with where it is and why."""

    source: str
    location: str
    reason: str
    kind: IssueKind = IssueKind.MALFORMED

    def __str__(self) -> str:
        return f"{self.source}:{self.location}: {self.kind.value}: {self.reason}"


ImportItem = ChatMessage | ImportIssue | MembershipChange  # a change: an export's leave or join entry
MessageIterator = Iterator[ImportItem]
MessagesOnly = Iterator[ChatMessage | ImportIssue]  # a format that carries no leave or join


class ImportFileError(ValueError):
    """The file as a whole cannot be read as the format (not JSON, wrong shape, unreadable)."""


HOLDS_NOTHING = "empty message (only control or invisible characters)"


def kept(message: ChatMessage, source: str, location: str) -> ChatMessage | ImportIssue:
    """`message`, or a SKIPPED issue at `location` when it holds nothing (`holds_nothing`: its text, as
    kept, blank or only control and invisible characters), as every live adapter passes such a message
    over: imported, it was an empty message in the chat's memory."""
    if holds_nothing(message.text):
        return ImportIssue(source, location, HOLDS_NOTHING, IssueKind.SKIPPED)
    return message


def id_clash(source: str, message: ChatMessage) -> ImportIssue:
    """The report of a message whose id its chat already holds with another text (the first is kept)."""
    return ImportIssue(
        source,
        f"message {message.message_id}",
        "its id is already taken in this chat by a message with other text; the first one is kept",
    )


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


def addressing(
    sender_id: str,
    mentions: tuple[str, ...],
    reply_to: str | None,
    bot_id: str | None,
    senders: Mapping[str, str],
) -> tuple[bool, bool]:
    """(is_bot, to_bot) for an imported message, given the bot's id and the senders seen so far."""
    if bot_id is None:
        return False, False
    is_bot = sender_id == bot_id
    to_bot = not is_bot and (bot_id in mentions or (reply_to is not None and senders.get(reply_to) == bot_id))
    return is_bot, to_bot


Converter = Callable[[Any, dict[str, str]], "ChatMessage | list[MembershipChange] | str"]


def convert_entries(
    source: Path,
    entries: Iterable[Any],
    where: str,
    convert: Converter,
    progress: Progress | None,
    done: int,
    total: int,
) -> MessageIterator:
    """Run `convert(entry, senders)` over a JSON export's entries and yield messages, membership
    changes and issues.

    `convert` returns the message, the members a service entry says left or joined, or a string saying
    why a well-formed entry is skipped, and raises ValueError or TypeError for a broken one. Locations
    read `<where>messages[i] (id …)`; progress counts from `done` towards `total`.
    """
    senders: dict[str, str] = {}
    for index, entry in enumerate(entries):
        if progress is not None:
            progress(done + index + 1, total)
        location = f"{where}messages[{index}]"
        if isinstance(entry, Mapping) and entry.get("id") is not None:
            location += f" (id {entry.get('id')})"
        try:
            item = convert(entry, senders)
        except (ValueError, TypeError) as exc:
            yield ImportIssue(str(source), location, str(exc))
            continue
        if isinstance(item, str):
            yield ImportIssue(str(source), location, item, IssueKind.SKIPPED)
            continue
        if isinstance(item, list):
            yield from item
            continue
        senders[item.message_id] = item.sender_id
        yield kept(item, str(source), location)
