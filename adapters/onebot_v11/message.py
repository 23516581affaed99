"""OneBot v11 messages: CQ-code strings and segment arrays, and their conversion to neutral segments.

A message arrives either as an array of segments (`[{"type": "text", "data": {"text": "hi"}}]`) or as a
string with CQ codes (`hi[CQ:at,qq=123]`). Both are normalised to the array form, then to
`memory.types.Segment`s: text and mentions keep their text, a reply becomes a REPLY segment, media become
placeholders such as "[image]" with the url or file id as target.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memory.text.unicode import lone_surrogate_at
from memory.types import InvalidMessage, Segment, SegmentKind

RawSegment = dict[str, Any]

_CQ_CODE = re.compile(r"\[CQ:([A-Za-z0-9_.\-]+)((?:,[^,\]]*)*)\]")


def escape(text: str, *, in_param: bool = False) -> str:
    """Escape text for a CQ string: `&`, `[`, `]` always, and `,` too inside a CQ code parameter."""
    text = text.replace("&", "&amp;").replace("[", "&#91;").replace("]", "&#93;")
    return text.replace(",", "&#44;") if in_param else text


def unescape(text: str) -> str:
    """Undo `escape` (`&amp;` last, so `&amp;#91;` becomes the literal `&#91;`)."""
    return text.replace("&#44;", ",").replace("&#91;", "[").replace("&#93;", "]").replace("&amp;", "&")


def parse_cq(message: str) -> list[RawSegment]:
    """Split a CQ-code string into array-form segments; text between codes becomes text segments."""
    segments: list[RawSegment] = []
    pos = 0
    for match in _CQ_CODE.finditer(message):
        if match.start() > pos:
            segments.append(text_segment(unescape(message[pos : match.start()])))
        data: dict[str, str] = {}
        for part in match.group(2).split(",")[1:]:
            key, sep, value = part.partition("=")
            if key:
                data[key] = unescape(value) if sep else ""
        segments.append({"type": match.group(1), "data": data})
        pos = match.end()
    if pos < len(message):
        segments.append(text_segment(unescape(message[pos:])))
    return segments


def to_cq(segments: Iterable[RawSegment]) -> str:
    """Render array-form segments as a CQ-code string (the inverse of `parse_cq`)."""
    out: list[str] = []
    for seg in segments:
        kind = str(seg.get("type", ""))
        data = seg.get("data") or {}
        if kind == "text":
            out.append(escape(field_text(data, "text")))
            continue
        params = "".join(
            f",{key}={escape(_param_str(value), in_param=True)}"
            for key, value in data.items()
            if value is not None
        )
        out.append(f"[CQ:{kind}{params}]")
    return "".join(out)


def _param_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def text_segment(text: str) -> RawSegment:
    """An array-form text segment."""
    return {"type": "text", "data": {"text": text}}


def reply_segment(message_id: str) -> RawSegment:
    """An array-form reply segment; numeric ids are sent as integers, as implementations expect."""
    return {"type": "reply", "data": {"id": maybe_int(message_id)}}


def at_segment(user_id: str) -> RawSegment:
    """An array-form @ segment."""
    return {"type": "at", "data": {"qq": maybe_int(user_id) if user_id != "all" else "all"}}


def maybe_int(value: str) -> int | str:
    """A numeric id as the integer implementations expect; other ids stay strings."""
    try:
        return int(value)
    except ValueError:
        return value


def normalize_message(message: Any) -> list[RawSegment]:
    """Any of the forms OneBot allows (CQ string, one segment, segment array) as a segment array."""
    if message is None:
        return []
    if isinstance(message, str):
        return parse_cq(message)
    if isinstance(message, Mapping):
        message = [message]
    if not isinstance(message, list):
        raise InvalidMessage(f"message must be a string or a segment array, got {type(message).__name__}")
    segments: list[RawSegment] = []
    for index, seg in enumerate(message):
        if not isinstance(seg, Mapping) or not isinstance(seg.get("type"), str):
            raise InvalidMessage(f"message segment {index} has no string 'type': {seg!r}")
        data = seg.get("data")
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise InvalidMessage(f"message segment {index} has a non-object 'data': {data!r}")
        segments.append({"type": seg["type"], "data": dict(data)})
    return segments


@dataclass(frozen=True, slots=True)
class Converted:
    """A OneBot message in neutral form."""

    segments: tuple[Segment, ...]
    text: str
    mentions: tuple[str, ...]
    reply_to: str | None


_PLACEHOLDERS: dict[str, tuple[SegmentKind, str]] = {
    "image": (SegmentKind.IMAGE, "[image]"),
    "face": (SegmentKind.FACE, "[face]"),
    "mface": (SegmentKind.FACE, "[sticker]"),
    "record": (SegmentKind.OTHER, "[voice]"),
    "video": (SegmentKind.OTHER, "[video]"),
    "file": (SegmentKind.FILE, "[file]"),
    "forward": (SegmentKind.OTHER, "[forward]"),
    "node": (SegmentKind.OTHER, "[forward]"),
    "json": (SegmentKind.OTHER, "[card]"),
    "xml": (SegmentKind.OTHER, "[card]"),
    "share": (SegmentKind.OTHER, "[share]"),
    "location": (SegmentKind.OTHER, "[location]"),
    "music": (SegmentKind.OTHER, "[music]"),
    "contact": (SegmentKind.OTHER, "[contact]"),
    "poke": (SegmentKind.OTHER, "[poke]"),
    "shake": (SegmentKind.OTHER, "[poke]"),
    "dice": (SegmentKind.OTHER, "[dice]"),
    "rps": (SegmentKind.OTHER, "[rps]"),
}


def to_neutral(message: Any, *, names: Mapping[str, str] | None = None) -> Converted:
    """Convert a OneBot message (any form) to neutral segments, display text, mentions and reply target.

    `names` maps user ids to display names, used for `@` segments that carry no name of their own.
    """
    names = names or {}
    segments: list[Segment] = []
    mentions: list[str] = []
    reply_to: str | None = None
    for seg in normalize_message(message):
        kind, data = seg["type"], seg["data"]
        if kind == "text":
            segments.append(Segment(SegmentKind.TEXT, field_text(data, "text")))
        elif kind == "at":
            target = id_field(data, "qq")
            if not target:
                continue
            if target == "all":
                segments.append(Segment(SegmentKind.MENTION, "@全体成员", "all"))
                continue
            name = str(data.get("name") or names.get(target) or target).lstrip("@")
            segments.append(Segment(SegmentKind.MENTION, f"@{name}", target))
            if target not in mentions:
                mentions.append(target)
        elif kind == "reply":
            target = id_field(data, "id")
            if target:
                segments.append(Segment(SegmentKind.REPLY, "", target))
                reply_to = reply_to or target
        elif kind == "markdown":
            segments.append(Segment(SegmentKind.TEXT, field_text(data, "content")))
        else:
            segments.append(_placeholder(kind, data))
    text = "".join(s.text for s in segments if s.kind is not SegmentKind.REPLY).strip()
    return Converted(tuple(segments), text, tuple(mentions), reply_to)


def reply_target(segments: Iterable[RawSegment]) -> str | None:
    """The message id the first reply segment with an id points to."""
    for seg in segments:
        if seg["type"] == "reply" and (target := id_field(seg["data"], "id")):
            return target
    return None


def field_text(data: Mapping[str, Any], key: str) -> str:
    """`data[key]` as text; absent and JSON null are both empty (implementations send null for unset)."""
    value = data.get(key)
    return "" if value is None else str(value)


def id_field(data: Mapping[str, Any], key: str) -> str:
    """`data[key]` as an id (a QQ number, a message id), stripped; empty when absent or when it is no
    valid Unicode (a lone surrogate escaped in the frame): such an id can name no one and be stored
    nowhere, and the segment is left out rather than the message."""
    value = field_text(data, key).strip()
    return "" if lone_surrogate_at(value) is not None else value


def _placeholder(kind: str, data: Mapping[str, Any]) -> Segment:
    seg_kind, text = _PLACEHOLDERS.get(kind, (SegmentKind.OTHER, f"[{kind}]"))
    target: Any = None
    if kind in ("image", "record", "video", "file"):
        target = data.get("url") or data.get("file") or data.get("file_id")
    elif kind == "face":
        target = data.get("id")
    elif kind == "mface":
        summary = str(data.get("summary") or "").strip()
        text = summary if summary.startswith("[") else text
        target = data.get("emoji_id") or data.get("url")
    elif kind == "share":
        target = data.get("url")
        title = str(data.get("title") or "").strip()
        text = f"[share: {title}]" if title else text
    elif kind in ("forward",):
        target = data.get("id")
    if kind == "file" and data.get("name"):
        text = f"[file: {data['name']}]"
    return Segment(seg_kind, text, None if target in (None, "") else str(target))
