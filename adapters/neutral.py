"""Small helpers for building neutral messages, shared by the adapters and the importers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memory.text import clean_text, drop_invisible, truncate
from memory.types import ChatKind, Segment, SegmentKind

CHAT_KINDS = {"group": ChatKind.GROUP, "private": ChatKind.PRIVATE}


def as_id(value: Any) -> str | None:
    """A platform id as a string (ints, including negative ones, or non-blank strings); None otherwise."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def forwarded_flag(record: Mapping[str, Any]) -> bool:
    """A JSON object's optional `forwarded` key (the message re-shares words written elsewhere): false
    when absent; raises ValueError saying so for anything but true or false (null, "true", 1...)."""
    value = record.get("forwarded", False)
    if not isinstance(value, bool):
        raise ValueError(f"forwarded must be true or false, got {truncate(repr(value), 40)}")
    return value


def chat_kind_named(record: Mapping[str, Any]) -> ChatKind:
    """A JSON object's optional `chat_kind` key ("group" or "private"): a group when absent; raises
    ValueError saying so for anything else (null, "channel", a list...)."""
    value = record.get("chat_kind", "group")
    if not isinstance(value, str) or value not in CHAT_KINDS:
        raise ValueError(f"chat_kind must be 'group' or 'private', got {truncate(repr(value), 40)}")
    return CHAT_KINDS[value]


def holds_nothing(text: str) -> bool:
    """Whether a message of `text` has nothing to keep: as a ChatMessage keeps it (control characters
    dropped) it is blank or only characters that show nothing. Every live adapter passes such a message
    over, as it passes over a join or a pin (the playground refuses such a post): stored, it was an empty
    message in the chat's memory."""
    return not drop_invisible(clean_text(text)).strip()


def mapping_at(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """`data[key]` when it is a JSON object, else an empty one (absent, null or of the wrong type)."""
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


def joined_text(*groups: Iterable[Segment]) -> str:
    """The text of each group of segments run together, the non-empty groups joined by one space.

    Used for "media placeholder + caption" (`[image] 装备截图`), where the parts are not adjacent text.
    """
    parts = ("".join(s.text for s in group if s.kind is not SegmentKind.REPLY) for group in groups)
    return " ".join(p for p in parts if p).strip()


def mention_targets(segments: Iterable[Segment]) -> tuple[str, ...]:
    """The distinct targets of MENTION segments, in order."""
    return tuple(dict.fromkeys(s.target for s in segments if s.kind is SegmentKind.MENTION and s.target))


def addressing_no_one(segments: Iterable[Segment]) -> tuple[Segment, ...]:
    """`segments` with each MENTION made plain text: words forwarded from elsewhere, whose @s the member
    forwarding them did not write."""
    return tuple(Segment(SegmentKind.TEXT, s.text) if s.kind is SegmentKind.MENTION else s for s in segments)


def reply_prefix(reply_to: str | None, quote: str = "") -> tuple[Segment, ...]:
    """A leading REPLY segment for `reply_to` (none when it is None)."""
    return (Segment(SegmentKind.REPLY, quote, reply_to),) if reply_to is not None else ()
