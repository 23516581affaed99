"""Import and export of the dictionary as CSV or JSON (for admins who already keep one).

Columns / keys: `content` (required), `meaning`, `status` (default approved), `is_jargon`
(true/false/empty), and on export also `id`, `chat_id`, `count`, `provenance`. A JSON file is a list
of such objects, or an object `{term: meaning}`. Imported rows are manual decisions (inference never
touches them); a bad row is reported with its number and the others still load. A row whose `chat_id`
names a chat (an entry exported from that chat's own dictionary) loads only into that same chat: never
into the global dictionary, where every chat would see it, nor into another chat.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from memory import untrusted_json
from memory.jargon import dictionary
from memory.jargon.dictionary import EntryView, JargonError
from memory.storage.sql import stored_int

Format = Literal["csv", "json"]
EXPORT_FIELDS = ("id", "chat_id", "content", "meaning", "is_jargon", "status", "provenance", "count")


@dataclass(frozen=True, slots=True)
class ImportRow:
    """One row to import."""

    content: str
    meaning: str = ""
    status: str = "approved"
    is_jargon: bool | None = True
    chat_id: int | None = None  # the chat whose own entry this was, when the row says so


@dataclass(slots=True)
class ImportReport:
    """What an import did; `errors` are (row number, message)."""

    created: int = 0
    updated: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)


def _flag(value: Any) -> bool | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "y"):
        return True
    if text in ("false", "0", "no", "n"):
        return False
    raise JargonError(f"is_jargon must be true, false or empty, not {value!r}")


def _owner(value: Any) -> int | None:
    """An exported `chat_id`: a chat's database id, or empty for the global dictionary."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and (number := stored_int(value)) is not None:
        return number
    raise JargonError(f"chat_id must be a chat's id or empty, not {value!r}")


def _text(raw: dict[str, Any], key: str) -> str:
    """A text field of a row: a string, or a whole number (`666` written unquoted); missing or null is
    empty. An object, list, true/false or fraction is refused: stored as Python wrote it
    ("{'a': 1}") it became a term or meaning nobody wrote."""
    value = raw.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise JargonError(f"'{key}' must be text, not {_json_kind(value)}")


def _json_kind(value: Any) -> str:
    kinds = {dict: "an object", list: "a list", bool: "true/false", float: "a fraction"}
    return kinds.get(type(value), type(value).__name__)


def _row(raw: Any) -> ImportRow:
    if not isinstance(raw, dict):
        raise JargonError("expected an object with at least 'content'")
    content = _text(raw, "content").strip()
    if not content:
        raise JargonError("'content' is missing or empty")
    status = _text(raw, "status").strip() or "approved"
    flag = _flag(raw.get("is_jargon", True))
    return ImportRow(content, _text(raw, "meaning"), status, flag, _owner(raw.get("chat_id")))


def parse(text: str, fmt: Format) -> tuple[list[tuple[int, ImportRow]], list[tuple[int, str]]]:
    """Rows (numbered from 1) and the errors of rows that could not be read."""
    raws: list[Any]
    if fmt == "json":
        try:
            data = untrusted_json.loads(text)
        except json.JSONDecodeError as exc:
            raise JargonError(f"invalid JSON: {exc}") from None
        if isinstance(data, dict) and data.keys() == {"entries"} and isinstance(data["entries"], list):
            raws = data["entries"]  # what the console's `GET /api/jargon` answers
        elif isinstance(data, dict):
            raws = [{"content": k, "meaning": v} for k, v in data.items()]
        elif isinstance(data, list):
            raws = data
        else:
            raise JargonError(
                'a JSON dictionary is a list of objects, {"entries": [objects]} or an object {term: meaning}'
            )
    else:
        raws = _csv_rows(text.lstrip("\ufeff"))
    rows: list[tuple[int, ImportRow]] = []
    errors: list[tuple[int, str]] = []
    for number, raw in enumerate(raws, 1):
        if isinstance(raw, JargonError):
            errors.append((number, str(raw)))
            continue
        try:
            rows.append((number, _row(raw)))
        except JargonError as exc:
            errors.append((number, str(exc)))
    return rows, errors


def _csv_rows(text: str) -> list[dict[str, str] | JargonError]:
    """The data rows by the header's column names, or the error of a row that could not be read."""
    records = _csv_records(text)
    header = next(records, [])
    if isinstance(header, JargonError):
        raise JargonError(f"the header row cannot be read: {header}")
    if "content" not in header:
        raise JargonError("a CSV dictionary needs a header row with a 'content' column")
    return [
        record if isinstance(record, JargonError) else dict(zip(header, record, strict=False))
        for record in records
        if record != []  # a blank line
    ]


class _Lines:
    """The lines from `start` on for a csv reader, noting whether it asked for more after the last one."""

    def __init__(self, lines: list[str], start: int) -> None:
        self._lines = iter(lines[start:])
        self.exhausted = False

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        try:
            return next(self._lines)
        except StopIteration:
            self.exhausted = True
            raise


def _csv_records(text: str) -> Iterator[list[str] | JargonError]:
    """Each CSV record's fields, or a JargonError for one that cannot be read; reading goes on after it.

    A quote left open would take the rest of the file into one field: its record is reported and reading
    starts again on the line after the one that record began on, so the rows below it still load.
    """
    lines = io.StringIO(text).readlines()
    start = 0
    while True:
        source = _Lines(lines, start)
        reader = csv.reader(source, strict=True)
        while True:
            begins = start + reader.line_num  # index of the line the next record begins on
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                if source.exhausted:
                    yield JargonError(f"the quote opened in the row on line {begins + 1} is never closed")
                    start = begins + 1
                    break
                where = f"line {begins + 1}"
                if start + reader.line_num > begins + 1:
                    where += f" (to line {start + reader.line_num})"
                yield JargonError(f"the row on {where} cannot be read: {exc}")
                continue
            yield fields


async def import_rows(
    session: AsyncSession,
    rows: Sequence[tuple[int, ImportRow]],
    chat_id: int | None,
    actor: str,
    now: float,
) -> ImportReport:
    """Add or overwrite each row in the scope `chat_id` (None = global). A row of another chat's own
    dictionary is refused: loading it here would show it where its chat never meant it to be seen."""
    report = ImportReport()
    for number, row in rows:
        if row.chat_id is not None and row.chat_id != chat_id:
            here = "the global dictionary" if chat_id is None else f"chat {chat_id}"
            report.errors.append(
                (
                    number,
                    f"an entry of chat {row.chat_id}'s own dictionary, not of {here}: import it into "
                    "that chat, or empty its chat_id",
                )
            )
            continue
        try:
            async with session.begin_nested():
                _entry, created = await dictionary.add_manual(
                    session, row.content, row.meaning, chat_id, actor, now, row.status, row.is_jargon
                )
        except JargonError as exc:
            report.errors.append((number, str(exc)))
            continue
        if created:
            report.created += 1
        else:
            report.updated += 1
    return report


def render(entries: Sequence[EntryView], fmt: Format) -> str:
    """The entries as CSV or JSON text (readable back by `parse`)."""
    records = [{name: getattr(e, name) for name in EXPORT_FIELDS} for e in entries]
    if fmt == "json":
        return json.dumps(records, ensure_ascii=False, indent=2) + "\n"
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=EXPORT_FIELDS, lineterminator="\n")
    writer.writeheader()
    for record in records:
        flag = record["is_jargon"]
        writer.writerow({**record, "is_jargon": "" if flag is None else str(flag).lower()})
    return out.getvalue()
