"""QQ history: a OneBot/NapCat JSON dump, or the text file QQ's message manager exports.

JSON: a list of OneBot message events, `{"messages": [...]}` (the `data` of NapCat's
`get_group_msg_history` / `get_friend_msg_history`), or the whole action response `{"status", "data"}`.
Each entry is converted exactly as the live OneBot adapter converts an event; a list of events a
logger kept may hold `group_decrease` / `group_increase` notices too, read as members leaving and
joining as live.

Text (消息管理器 → 导出消息记录 → .txt): sections headed `消息对象:<name>`, each message a header line
`2017-02-25 10:40:20 【管理员】昵称(123456)` (or `昵称<email>`) followed by its lines. The text format has no
message ids and no group number: ids are derived from the content (stable, so importing twice adds
nothing) and the chat id is the `chat_id` argument, else the section's name (`private-` in front for a
friend's section, as the live adapter names private chats). A file holding several
chats (several `消息对象` sections) is refused with a `chat_id`, which could only name one of them.

Neither is read whole: a JSON dump is streamed as the Telegram and Discord exports are (`json_stream`),
a text export read twice a line at a time (its encoding, lines and sections, then its messages).
"""

from __future__ import annotations

import codecs
import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from adapters.importers.base import (
    ImportFileError,
    ImportIssue,
    IssueKind,
    MessageIterator,
    Progress,
    kept,
)
from adapters.importers.json_stream import EntryReader, MessageArray, read_outline, stream
from adapters.neutral import as_id, holds_nothing
from adapters.onebot_v11.event import (
    BOT_REMOVED,
    PLATFORM,
    MessageEvent,
    ReplyInfo,
    membership_notice,
    private_chat_id,
    private_peer,
    to_chat_message,
)
from memory.text import loggable
from memory.types import ChatKind, ChatMessage, InvalidMessage, MembershipChange, Segment, SegmentKind

CHINA = ZoneInfo("Asia/Shanghai")
SYSTEM_SENDERS = frozenset({"10000", "1000000"})

_HEADER = re.compile(
    r"^(?P<date>\d{4}-\d{1,2}-\d{1,2}) (?P<time>\d{1,2}:\d{2}:\d{2}) (?:【[^】]*】)?(?P<name>.*?)"
    r"(?:\((?P<qq>\d{4,})\)|<(?P<email>[^<>\s]+)>)$"
)
_SECTION = re.compile(r"^消息(?P<key>分组|对象)[:：](?P<value>.*)$")
# The message manager files each chat under a category (消息分组): a group under 我的QQ群, 我的群聊 or
# 我的群组, a discussion under 我的讨论组 (多人聊天), and a one-to-one talk under the friend group of
# the friend (我的好友, or one the owner made or kept: 朋友, 家人, 同学…), 最近联系人, 陌生人 or 我的设备.
_GROUP_CATEGORY = re.compile(r"群|讨论组|多人聊天")
_PRIVATE_CATEGORY = re.compile(r"好友|联系人")
_PLACEHOLDER = re.compile(r"\[(图片|表情)\]")
# The export's separator is a line of 64 '='; a short run of '=' is something a member wrote.
_RULE = re.compile(r"^\s*={32,}\s*$")
_CHUNK = 1 << 16  # characters read at a time while looking for the file's first sign
_NEUTRAL = {"图片": (SegmentKind.IMAGE, "[image]"), "表情": (SegmentKind.FACE, "[face]")}


def iter_messages(
    path: str | Path,
    *,
    chat_id: str | None = None,
    self_id: str | None = None,
    tz: tzinfo = CHINA,
    progress: Progress | None = None,
) -> MessageIterator:
    """Yield messages and `ImportIssue`s from a QQ JSON dump or a message-manager .txt export.

    `chat_id` sets the group number for text exports (and for JSON entries lacking `group_id`); `self_id`
    is the bot's QQ, to mark its messages and those addressed to it; `tz` is the zone of text timestamps.
    """
    path = Path(path)
    scan = _scan_text(path, chat_id is not None)
    if scan.json:
        yield from _iter_json(path, chat_id, self_id, progress)
    else:
        if chat_id is not None:
            _check_single_chat(path, scan.chats, chat_id)
        yield from _iter_txt(
            path, _read_lines(path, scan.encoding), scan.lines, chat_id, self_id, tz, progress
        )


@dataclass(slots=True)
class _Scan:
    """What a first pass over the file found: its encoding, whether it is JSON, its lines (counted by
    `str.splitlines`) and the names of its `消息对象` sections (when asked for)."""

    encoding: str
    json: bool = False
    lines: int = 0
    chats: dict[str, None] = field(default_factory=dict)


def _scan_text(path: Path, want_chats: bool) -> _Scan:
    """Read the file through once, a line at a time, as `decode_saved` would decode it whole: UTF-16
    after its byte order mark, else UTF-8, else GB18030. A file starting with `[` or `{` is JSON (read
    by ijson, so the pass stops there). Raises `ImportFileError` for a file that cannot be read, is
    in none of these encodings, or holds nothing but blanks."""
    try:
        with path.open("rb") as handle:
            utf16 = handle.read(2) in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot read: {exc}") from exc
    for encoding in ("utf-16",) if utf16 else ("utf-8-sig", "gb18030"):
        scan = _Scan(encoding)
        blank = True
        try:
            if _first_sign(path, encoding) in ("[", "{"):
                scan.json = True
                return scan
            for line in _read_lines(path, encoding):
                blank = blank and not line.strip()
                scan.lines += 1
                if want_chats and (match := _SECTION.match(line.strip())) and match.group("key") == "对象":
                    scan.chats[match.group("value").strip()] = None
        except UnicodeDecodeError as exc:
            if utf16:
                raise ImportFileError(
                    f"{path}: starts with a UTF-16 byte order mark but is not UTF-16 text ({exc.reason})"
                ) from exc
            continue
        if blank:
            raise ImportFileError(f"{path}: the file is empty")
        return scan
    raise ImportFileError(f"{path}: neither UTF-8, UTF-16 nor GB18030 text")


def _first_sign(path: Path, encoding: str) -> str:
    """The file's first character that is no blank ("" for none), read a chunk at a time: a JSON dump
    may be one line of gigabytes."""
    try:
        with path.open(encoding=encoding) as handle:
            while chunk := handle.read(_CHUNK):
                if text := chunk.lstrip():
                    return text[0]
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot read: {exc}") from exc
    return ""


def _read_lines(path: Path, encoding: str) -> Iterator[str]:
    """The file's lines as `str.splitlines` of its whole text gives them, one at a time."""
    try:
        with path.open(encoding=encoding, newline="") as handle:
            for line in handle:  # ends at \n, \r or \r\n; splitlines also at \v, \f, \x1c-\x1e, \x85…
                yield from line.splitlines()
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot read: {exc}") from exc


# -- JSON dumps ----------------------------------------------------------------------------------------


_ARRAYS = ("", "messages", "data", "data.messages")
_KEEP = ("status", "retcode", "data", "messages", "message", "wording")


def _entries(root: Any, path: Path) -> MessageArray:
    if isinstance(root, Mapping) and _failed(root):
        raise ImportFileError(f"{path}: a failed OneBot API response, not message history: {_why(root)}")
    if isinstance(root, Mapping) and "data" in root and ("status" in root or "retcode" in root):
        root = root["data"]
    if isinstance(root, Mapping) and isinstance(root.get("messages"), MessageArray):
        return root["messages"]
    if isinstance(root, MessageArray):
        return root
    raise ImportFileError(f"{path}: expected a list of OneBot messages or an object with 'messages'")


def _failed(response: Mapping[str, Any]) -> bool:
    """Whether a JSON object is an action response saying the action failed (NapCat's saved answer to a
    history request it could not serve: status "failed", or a non-zero retcode and no data)."""
    retcode = response.get("retcode")
    error_code = isinstance(retcode, int) and not isinstance(retcode, bool) and retcode != 0
    return response.get("status") == "failed" or (error_code and response.get("data") is None)


def _why(response: Mapping[str, Any]) -> str:
    """A failed response's retcode and its `message`/`wording` (each once), one line, cut short."""
    said = dict.fromkeys(
        loggable(text.strip())
        for key in ("wording", "message")
        if isinstance(text := response.get(key), str) and text.strip()
    )
    return f"retcode {response.get('retcode')!r}: " + (" / ".join(said) or "no message given")


def _iter_json(
    path: Path, chat_id: str | None, self_id: str | None, progress: Progress | None
) -> MessageIterator:
    outline = read_outline(path, _ARRAYS, _KEEP)
    entries = _entries(outline.root, path)

    def read(reader: EntryReader) -> MessageIterator:
        return _json_messages(path, reader.entries(entries, ""), entries.count, chat_id, self_id, progress)

    yield from stream(outline, read)


def _json_messages(
    path: Path,
    entries: Iterable[Any],
    total: int,
    chat_id: str | None,
    self_id: str | None,
    progress: Progress | None,
) -> MessageIterator:
    # By (chat kind, chat id, message id): a dump of several chats may repeat an id.
    known: dict[tuple[str, str, str], ReplyInfo] = {}
    for index, entry in enumerate(entries):
        if progress is not None:
            progress(index + 1, total)
        location = f"messages[{index}]"
        if isinstance(entry, Mapping):
            if entry.get("message_id") is not None:
                location += f" (message_id {entry['message_id']})"
            kind = entry.get("post_type")
            if kind == "notice" and (found := _membership(entry, str(path), location, self_id)):
                yield found
                continue
            if kind not in (None, "message", "message_sent"):
                yield ImportIssue(str(path), location, f"{kind} event, not a message", IssueKind.SKIPPED)
                continue
            if (
                chat_id is not None
                and entry.get("group_id") is None
                and entry.get("message_type") != "private"
            ):
                entry = {**entry, "group_id": chat_id, "message_type": "group"}
        try:
            event = MessageEvent.from_dict(entry)
            reply_target = next((s["data"].get("id") for s in event.message if s["type"] == "reply"), None)
            place = (event.chat_kind.value, event.chat_id)
            reply = known.get((*place, str(reply_target))) if reply_target is not None else None
            message = to_chat_message(event, self_id=self_id, reply=reply)
        except InvalidMessage as exc:
            yield ImportIssue(str(path), location, str(exc))
            continue
        known[(message.chat_kind.value, message.chat_id, message.message_id)] = ReplyInfo(message.sender_id)
        yield kept(message, str(path), location)


def _membership(
    entry: Mapping[str, Any], source: str, location: str, self_id: str | None
) -> MembershipChange | ImportIssue | None:
    """A member leaving or joining a group, from a `group_decrease` or `group_increase` notice kept in
    the dump, as the live adapter reads it; one about the bot's own account (`kick_me`, its id) is
    passed over, as live. None for any other notice."""
    try:
        change = membership_notice(entry)
    except InvalidMessage as exc:
        return ImportIssue(source, location, str(exc))
    if change is None:
        return None
    ours = {i for i in (self_id, as_id(entry.get("self_id"))) if i is not None}
    if entry.get("sub_type") == BOT_REMOVED or change.user_id in ours:
        return ImportIssue(source, location, "the bot's own account leaving or joining", IssueKind.SKIPPED)
    return change


# -- message-manager text ------------------------------------------------------------------------------


def _iter_txt(
    path: Path,
    lines: Iterable[str],
    total: int,
    chat_id: str | None,
    self_id: str | None,
    tz: tzinfo,
    progress: Progress | None,
) -> MessageIterator:
    """The messages of a message-manager export's `lines` (`total` of them, for the progress)."""
    section_name = ""
    kind = ChatKind.GROUP
    # How often each message (its fingerprint's digest, not the fingerprint: memory stays small) came.
    seen: dict[bytes, int] = {}
    for start, header, body in _blocks(lines, total, path, progress):
        if isinstance(header, ImportIssue):
            yield header
            continue
        if header is None:  # a section line
            key, value = body
            if key == "对象":
                section_name = value.strip()
            else:
                kind = _category_kind(value)
            continue
        location = f"line {start}"
        sender = header.group("qq") or header.group("email")
        if sender in SYSTEM_SENDERS:
            yield ImportIssue(str(path), location, "system message", IssueKind.SKIPPED)
            continue
        content = "\n".join(body).strip("\n")
        if holds_nothing(content):
            yield ImportIssue(str(path), location, "empty message", IssueKind.SKIPPED)
            continue
        try:
            when = datetime.strptime(f"{header.group('date')} {header.group('time')}", "%Y-%m-%d %H:%M:%S")
        except ValueError as exc:
            yield ImportIssue(str(path), location, f"bad timestamp: {exc}")
            continue
        chat = chat_id or section_name or path.stem
        segments = _txt_segments(content)
        body_text = "".join(s.text for s in segments)
        fingerprint = "\x1f".join((chat, when.isoformat(), sender, body_text))
        same = hashlib.sha1(fingerprint.encode()).digest()
        seen[same] = seen.get(same, 0) + 1
        digest = hashlib.sha1(f"{fingerprint}\x1f{seen[same]}".encode()).hexdigest()[:20]
        is_bot = self_id is not None and sender == self_id
        try:
            yield ChatMessage(
                platform=PLATFORM,
                chat_id=private_chat_id(private_peer(chat)) if kind is ChatKind.PRIVATE else chat,
                message_id=f"txt-{digest}",
                sender_id=sender,
                text=body_text,
                time=when.replace(tzinfo=tz),
                sender_name=header.group("name").strip(),
                chat_name=section_name,
                chat_kind=kind,
                segments=segments,
                is_bot=is_bot,
            )
        except InvalidMessage as exc:
            yield ImportIssue(str(path), location, str(exc))


def _category_kind(category: str) -> ChatKind:
    """The kind of the chats a message-manager category (消息分组) holds: groups only under a category
    naming groups; any other holds one-to-one talks, whatever the owner named it (家人, 同学), and is
    private: taken for a group, a talk with one friend would be shared where groups are."""
    if _PRIVATE_CATEGORY.search(category) or not _GROUP_CATEGORY.search(category):
        return ChatKind.PRIVATE
    return ChatKind.GROUP


def _check_single_chat(path: Path, names: Mapping[str, None], chat_id: str) -> None:
    """Refuse to put the messages of several chats (`消息对象` sections, by name) under one `chat_id`."""
    if len(names) > 1:
        shown = ", ".join(list(names)[:3]) + (", …" if len(names) > 3 else "")
        raise ImportFileError(
            f"{path}: holds {len(names)} chats ({shown}) but one chat id {chat_id} was given; "
            "import a file per chat, or leave the chat id out to name each chat after its 消息对象"
        )


def _blocks(
    lines: Iterable[str], total: int, path: Path, progress: Progress | None
) -> Iterator[tuple[int, re.Match[str] | ImportIssue | None, Any]]:
    """(line number, header match, body lines) per message; (n, None, (key, value)) per section line."""
    current: tuple[int, re.Match[str], list[str]] | None = None
    for number, line in enumerate(lines, start=1):
        if progress is not None:
            progress(number, total)
        stripped = line.rstrip("\r")
        header = _HEADER.match(stripped)
        section = _SECTION.match(stripped.strip())
        if header is not None or section is not None or _RULE.match(stripped):
            if current is not None:
                yield current
                current = None
            if header is not None:
                current = (number, header, [])
            elif section is not None:
                yield number, None, (section.group("key"), section.group("value"))
            continue
        if current is not None:
            current[2].append(stripped)
        elif stripped.strip() and not stripped.startswith("消息记录"):
            yield number, ImportIssue(str(path), f"line {number}", "text outside any message"), None
    if current is not None:
        yield current


def _txt_segments(content: str) -> tuple[Segment, ...]:
    segments: list[Segment] = []
    pos = 0
    for match in _PLACEHOLDER.finditer(content):
        if match.start() > pos:
            segments.append(Segment(SegmentKind.TEXT, content[pos : match.start()]))
        kind, text = _NEUTRAL[match.group(1)]
        segments.append(Segment(kind, text))
        pos = match.end()
    if pos < len(content):
        segments.append(Segment(SegmentKind.TEXT, content[pos:]))
    return tuple(segments)
