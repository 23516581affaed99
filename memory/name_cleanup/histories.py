"""ChatHistory rows: the names heading the lines of their verbatim text (`pack.transcript_line`; a
forward's mark before its name stays) and those of their participants, with the rows' full-text
entries. A name is what the cleaned row it came from now holds: the bot's name for the speaker (renamed
by this run), else the name cleaned as the platform's names are, else (nothing left) the name the
speaker would be shown under today. The rest of each line is the message's text, kept as sent. A
summary and key points made offline (`digest.offline_digest`) are speakers' lines and a list of
speakers: their names are renamed alike, and the row's vector (it embeds the summary) goes, for the
backfill to embed it again; a model's summary is its own text and stays as written."""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, text

from memory.context.render import forward_marked
from memory.embeddings.store import vectors_of
from memory.history.pack import HISTORY_FTS, index_body, transcript_line
from memory.history.source import display_name_of
from memory.messages import sent_at
from memory.models import ChatHistory
from memory.name_cleanup.people import Renamed
from memory.name_cleanup.sql import HOLDS_INVISIBLE, batches, json_ids
from memory.storage.fts import delete_statement, insert_statement
from memory.text import holds_invisible, index_text
from memory.types import clean_name_field

if TYPE_CHECKING:
    from memory.name_cleanup.run import CleanupReport

log = logging.getLogger(__name__)
_PLACEHOLDER = "\x00"  # never in a message's text or a name (clean_text drops control characters)
# Every row's messages, and whether a participant's name holds a hidden character. A line's name is
# the speaker's name on their last line (a participant's) or came from a message whose names changed:
# only those rows are read whole (message text keeps hidden characters, ❤️'s selector among them).
_SCAN = text(
    "SELECT id, source_message_ids, EXISTS (SELECT 1 FROM json_each(participants) j "
    f"WHERE j.type = 'object' AND {HOLDS_INVISIBLE}(json_extract(j.value, '$.name'))) FROM chat_history"
)
_ROWS = text(
    "SELECT id, chat_id, theme, keywords, summary, key_points, original_text, participants, "
    "source_message_ids, provenance FROM chat_history WHERE id IN (SELECT value FROM json_each(:ids))"
)
# As offline_digest wrote them in the databases this upgrade reads: its English forms came later.
_LIST_OPEN, _LIST_CLOSE, _LIST_SEP, _POINT_SEP = "（", "）", "、", " / "
_FORWARD = forward_marked("", True)  # before a forward's name, in its line and its digest lines
# A member may type a name starting like the mark: such a speaker's line is read with the name whole.
_TYPED_MARK = _FORWARD.rstrip()
_SOURCES = text(
    "SELECT m.id, m.person_id, m.time, m.utc_offset_minutes, m.text, m.sender_card, m.sender_name, "
    "p.platform_user_id, p.nickname, c.person_name FROM messages m "
    "LEFT JOIN persons p ON p.id = m.person_id "
    "LEFT JOIN person_chat_names c ON c.chat_id = m.chat_id AND c.person_id = m.person_id "
    "WHERE m.id IN (SELECT value FROM json_each(:ids))"
)


@dataclass(frozen=True, slots=True)
class _Cleaned:
    """A row's verbatim text, participants, summary and key points with cleaned names."""

    original_text: str
    participants: list[Any]
    summary: str
    key_points: list[Any]
    model_names_old: bool = field(default=False, compare=False)  # see `_model_text_names`


@dataclass(frozen=True, slots=True)
class _Line:
    """One message's line, around its name: `head` + name + `tail`, or `marked_head` + name + `tail`
    when it was packed as a forward's. Which it is, the line itself says: this revision's messages have
    no `forwarded` column, and rows packed before forwards were marked have no mark. Except when the
    speaker's own name starts like the mark (`typed_mark`: a member who typed "(forwarded) X"): their
    line is then read as theirs, the name whole, whatever follows it."""

    head: str
    marked_head: str
    tail: str
    typed_mark: bool
    person_id: int | None
    user_id: str
    shown_today: str  # the name the line would show if packed today
    position: tuple[float, int]  # (time, id): packing wrote its lines in this order


def clean_histories(
    connection: Connection, changed: Collection[int], renamed: Renamed, report: CleanupReport
) -> None:
    """Rewrite the names in the rows that may hold dirty ones (a participant's name holds a hidden
    character, or a message of `changed` had its names cleaned), and re-index the rows that changed
    (after the messages, people and names are cleaned: names are taken from them)."""
    changed = set(changed)
    scanned = connection.execute(_SCAN).all()
    candidates = [i for i, sources, dirty in scanned if dirty or not changed.isdisjoint(json.loads(sources))]
    if candidates:  # each is parsed, and re-indexed if it changes (about 4 ms a topic, most of it jieba)
        log.info("%d topics may show a cleaned name: reading them", len(candidates))
    for chunk in batches(candidates):
        rows = connection.execute(_ROWS, {"ids": json_ids(chunk)}).mappings().all()
        lines = _lines(connection, {i for row in rows for i in json.loads(row["source_message_ids"])})
        rewritten = []
        for row in rows:
            cleaned = _cleaned(row, lines, renamed)
            if cleaned is None:
                report.histories_unread += 1
                continue
            if cleaned.model_names_old:
                report.histories_model_text += 1
                log.info("topic %s: the model's digest names someone by a name now cleaned; kept", row["id"])
            if cleaned != _Cleaned(
                row["original_text"],
                json.loads(row["participants"]),
                row["summary"],
                json.loads(row["key_points"]),
            ):
                rewritten.append((row, cleaned))
        _rewrite(connection, rewritten)
        report.histories += len(rewritten)
        summarised = [row["id"] for row, cleaned in rewritten if cleaned.summary != row["summary"]]
        if summarised:
            report.history_vectors += connection.execute(vectors_of("history", summarised)).rowcount


def _cleaned(row: Any, lines: dict[int, _Line], renamed: Renamed) -> _Cleaned | None:
    """A row with cleaned names, or None when its text is not its messages' lines."""
    ordered = sorted(
        (lines[i] for i in json.loads(row["source_message_ids"]) if i in lines),
        key=lambda line: line.position,
    )
    parsed = _names(row["original_text"], ordered)
    if parsed is None:
        return None
    heads, names = [head for head, _ in parsed], [name for _, name in parsed]
    chat = int(row["chat_id"])
    new_names = [_renamed(n, chat, line, renamed) for n, line in zip(names, ordered, strict=True)]
    original = "\n".join(
        head + n + line.tail for head, n, line in zip(heads, new_names, ordered, strict=True)
    )
    before = json.loads(row["participants"])
    participants = _participants(before, ordered, new_names)
    summary, key_points = row["summary"], json.loads(row["key_points"])
    speakers = dict(zip(names, new_names, strict=True))
    speakers.update(
        (str(was.get("name", "")), str(now.get("name", "")))
        for was, now in zip(before, participants, strict=True)
        if isinstance(was, dict) and isinstance(now, dict)
    )
    speakers = {was: now for was, now in speakers.items() if was != now}
    if row["provenance"] == "offline":
        summary = _offline_summary(summary, speakers)
        key_points = [_speaker_line(p, speakers) if isinstance(p, str) else p for p in key_points]
    return _Cleaned(original, participants, summary, key_points, _model_text_names(row, speakers))


def _model_text_names(row: Any, speakers: dict[str, str]) -> bool:
    """Whether a digest the model wrote still names a speaker by a name now cleaned. It is the model's
    own text and stays as written (a replacement could not tell a name from the same characters inside
    other words); the run counts such rows so the upgrade's log shows them.

    The dated events the person model wrote on timelines (`person_timeline` kind "event") are not
    counted: that model is shown each speaker as `person <id>` with their own words only
    (`consolidate._prompt_line`), never a stored name, so a name in an event comes from a message's
    text, which is kept as sent."""
    if row["provenance"] == "offline" or not speakers:
        return False
    listed = [str(x) for column in ("key_points", "keywords") for x in json.loads(row[column] or "[]")]
    written = "\n".join([row["theme"], row["summary"], *listed])
    return any(old and old in written for old in speakers)


def _speaker_line(line: str, speakers: dict[str, str]) -> str:
    """`digest.speaker_line`'s "name: text" with the speaker renamed, a forward's mark kept before it."""
    name, colon, said = line.partition(": ")
    if not colon:
        return line
    bare = name.removeprefix(_FORWARD)
    if name not in speakers and bare != name and bare in speakers:
        return _FORWARD + speakers[bare] + colon + said
    return speakers.get(name, name) + colon + said


def _offline_summary(summary: str, speakers: dict[str, str]) -> str:
    """`digest.offline_digest`'s summary, speakers' lines joined by " / " then the speakers in （、）,
    with the speakers renamed (its text cut short may end inside either part)."""
    if not speakers:
        return summary
    lines, bracket, names = summary.rpartition(_LIST_OPEN)
    if not bracket:  # cut short before the list
        lines, names = summary, ""
    renamed = _POINT_SEP.join(_speaker_line(line, speakers) for line in lines.split(_POINT_SEP))
    if not bracket:
        return renamed
    listed, close, rest = names.partition(_LIST_CLOSE)
    listed = _LIST_SEP.join(speakers.get(name, name) for name in listed.split(_LIST_SEP))
    return renamed + bracket + listed + close + rest


def _rewrite(connection: Connection, rewritten: Sequence[tuple[Any, _Cleaned]]) -> None:
    """Store rows' new text, participants, summary and key points, and their full-text entries anew."""
    if not rewritten:
        return
    connection.execute(
        text(
            "UPDATE chat_history SET original_text = :text, participants = :people, summary = :summary, "
            "key_points = :points WHERE id = :id"
        ),
        [
            {
                "text": new.original_text,
                "people": json.dumps(new.participants),
                "summary": new.summary,
                "points": json.dumps(new.key_points),
                "id": row["id"],
            }
            for row, new in rewritten
        ],
    )
    connection.execute(delete_statement(HISTORY_FTS), [{"rowid": row["id"]} for row, _ in rewritten])
    bodies = [{"rowid": row["id"], "body": index_text(_body(row, new))} for row, new in rewritten]
    connection.execute(insert_statement(HISTORY_FTS), bodies)


def _body(row: Any, new: _Cleaned) -> str:
    """What the full-text index holds of a row (`pack.index_body`), with its new text."""
    entry = ChatHistory(
        theme=row["theme"],
        keywords=json.loads(row["keywords"]),
        summary=new.summary,
        key_points=new.key_points,
        original_text=new.original_text,
    )
    return index_body(entry)


def _lines(connection: Connection, ids: Collection[int]) -> dict[int, _Line]:
    """The line of each of these messages, by message id."""
    lines = {}
    for row in connection.execute(_SOURCES, {"ids": json_ids(list(ids))}).all():
        message_id, person, time, offset, body, card, name, user, nickname, chat_name = row
        head, tail = transcript_line(sent_at(time, offset), _PLACEHOLDER, body).split(_PLACEHOLDER, 1)
        marked = transcript_line(sent_at(time, offset), _PLACEHOLDER, body, forwarded=True)
        user_id = user or str(person)
        shown = display_name_of((chat_name, card, name, nickname), user_id)
        typed = any((n or "").startswith(_TYPED_MARK) for n in (chat_name, card, name, nickname))
        lines[message_id] = _Line(
            head, marked.split(_PLACEHOLDER, 1)[0], tail, typed, person, user_id, shown, (time, message_id)
        )
    return lines


def _names(original: str, lines: Sequence[_Line]) -> list[tuple[str, str]] | None:
    """The head and the name of each line of `original`, or None when it is not these lines (a
    message gone since, or text that was never packed from them). A line marked as a forward's has
    the mark in its head, so its name is the speaker's alone and the mark stays when it is renamed."""
    found: list[tuple[str, str]] = []
    position = 0
    for i, line in enumerate(lines):
        heads = (line.head,) if line.typed_mark else (line.marked_head, line.head)
        head = next((h for h in heads if original.startswith(h, position)), None)
        if head is None:
            return None
        start = position + len(head)
        if i == len(lines) - 1:
            end = len(original) - len(line.tail)
            if end < start or not original.endswith(line.tail):
                return None
            found.append((head, original[start:end]))
            return found
        # The name ends where this message's text and the next line's head follow it (an unmarked
        # head starts the marked one too).
        end = original.find(line.tail + "\n" + lines[i + 1].head, start)
        if end < 0:
            return None
        found.append((head, original[start:end]))
        position = end + len(line.tail) + 1
    return found if original == "" else None


def _renamed(name: str, chat: int, line: _Line, renamed: Renamed) -> str:
    if not holds_invisible(name):
        return name
    if line.person_id is not None:
        was, now = renamed.get((chat, line.person_id), ("", ""))
        if name == was:
            return now
    return clean_name_field(name) or line.shown_today


def _participants(participants: list[Any], lines: Sequence[_Line], names: Sequence[str]) -> list[Any]:
    """Each participant shown under the name of their last line (as packing took it)."""
    last = {line.user_id: name for line, name in zip(lines, names, strict=True)}
    cleaned = []
    for participant in participants:
        if isinstance(participant, dict) and holds_invisible(str(participant.get("name", ""))):
            user = str(participant.get("user_id", ""))
            name = last.get(user) or clean_name_field(str(participant["name"])) or user
            participant = {**participant, "name": name}
        cleaned.append(participant)
    return cleaned
