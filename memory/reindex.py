"""Re-indexing the full-text rows of a database stamped with an older tokenizer (`INDEX_VERSION`).

A database's stamp (the `job_state` row `INDEX_JOB`) says by which version of `index_text` every row
of its full-text tables is indexed. When this version's is newer, each table is indexed again row by
row, in rowid order, a batch per write transaction that also moves the cursor: a process killed at any
point leaves every row either done or not, and the next run goes on from the cursor, so no row is
missed or indexed twice. A batch's texts are read and tokenized outside the write transaction, so
recording and recall never wait for jieba; recall finds a row by its old tokens until its batch is
written. The turn windows (made of their messages' tokens) are rebuilt last, once `messages_fts` is
done. Once every table is done, the stamp is this version's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.history.pack import HISTORY_FTS, index_body
from memory.models import ChatHistory, JobState
from memory.offload import text_work_in_runs
from memory.recall.preferences import PREFERENCE_FTS
from memory.storage import Database
from memory.storage.fts import INDEX_JOB, index_rows_tokenized, unindex_rows
from memory.storage.sql import in_list
from memory.text import INDEX_VERSION, index_text
from memory.turn_windows import WINDOWS_FTS, rebuild_windows

log = logging.getLogger(__name__)

MESSAGES_FTS = "messages_fts"
UNSTAMPED_VERSION = 1
"""The version of a database from before the stamp: its rows hold jieba's search-mode words only."""

BATCH_ROWS = 500
BATCH_CHARS = 1_000_000
"""A batch's limits: rows, and characters of text (at least one row): a few hundred milliseconds of
jieba off the loop, and a write transaction of a few milliseconds."""

Texts = Callable[[AsyncSession, Sequence[int]], Awaitable[dict[int, str]]]


def _column_texts(table: str, column: str) -> Texts:
    async def texts(session: AsyncSession, ids: Sequence[int]) -> dict[int, str]:
        params: dict[str, object] = {}
        found = await session.execute(
            text(f"SELECT id, {column} FROM {table} WHERE id IN ({in_list('i', ids, params)})"), params
        )
        return {int(row[0]): str(row[1]) for row in found}

    return texts


async def _history_texts(session: AsyncSession, ids: Sequence[int]) -> dict[int, str]:
    rows = await session.scalars(select(ChatHistory).where(ChatHistory.id.in_(ids)))
    return {row.id: index_body(row) for row in rows}


TEXTS: Mapping[str, Texts] = {
    MESSAGES_FTS: _column_texts("messages", "text"),
    HISTORY_FTS: _history_texts,
    PREFERENCE_FTS: _column_texts("preference_docs", "text"),
}
"""What each full-text table indexes, by the id of the row (its rowid there)."""

TABLES = (MESSAGES_FTS, HISTORY_FTS, PREFERENCE_FTS, WINDOWS_FTS)
"""Every full-text table in the order re-indexed: the turn windows last, made of `messages_fts`'s tokens."""


@dataclass(frozen=True, slots=True)
class IndexStamp:
    """How far a database's full-text rows are: all indexed by `version`, and when that is older than
    this version's, re-indexed up to rowid `cursor` of `table`."""

    version: int
    table: str = TABLES[0]
    cursor: int = 0

    @property
    def pending(self) -> bool:
        return self.version < INDEX_VERSION


async def read_stamp(session: AsyncSession) -> IndexStamp:
    """The database's stamp (version 1 for one from before stamps)."""
    row = await session.get(JobState, (INDEX_JOB, 0), populate_existing=True)
    if row is None:
        return IndexStamp(UNSTAMPED_VERSION)
    data = row.data
    version = int(data.get("version", UNSTAMPED_VERSION))
    if data.get("target") != INDEX_VERSION or data.get("table") not in TABLES:
        return IndexStamp(version)  # nothing under way for this version: from the start
    return IndexStamp(version, str(data["table"]), row.cursor)


async def _save(session: AsyncSession, stamp: IndexStamp) -> None:
    data: dict[str, object] = {"version": stamp.version}
    if stamp.pending:
        data.update(target=INDEX_VERSION, table=stamp.table)
    row = await session.get(JobState, (INDEX_JOB, 0))
    if row is None:
        session.add(JobState(job=INDEX_JOB, chat_id=0, cursor=stamp.cursor, last_run=0.0, data=data))
    else:
        row.cursor, row.data = stamp.cursor, data


async def rows_left(session: AsyncSession) -> int:
    """How many full-text rows are still to re-index (0 when the stamp is this version's)."""
    stamp = await read_stamp(session)
    if not stamp.pending:
        return 0
    left = 0
    for table in TABLES[TABLES.index(stamp.table) :]:
        after = stamp.cursor if table == stamp.table else 0
        found = await session.execute(
            text(f"SELECT count(*) FROM {table} WHERE rowid > :after"), {"after": after}
        )
        left += int(found.scalar_one())
    return left


async def _next_rowids(session: AsyncSession, table: str, after: int, limit: int) -> list[int]:
    found = await session.execute(
        text(f"SELECT rowid FROM {table} WHERE rowid > :after ORDER BY rowid LIMIT :limit"),
        {"after": after, "limit": limit},
    )
    return [int(row[0]) for row in found]


def _within_chars(rowids: list[int], texts: Mapping[int, str]) -> list[int]:
    """The first rowids whose texts hold at most BATCH_CHARS characters in all (at least one)."""
    held = 0
    for i, rowid in enumerate(rowids):
        held += len(texts.get(rowid, ""))
        if i and held > BATCH_CHARS:
            return rowids[:i]
    return rowids


def _tokenized(rows: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    return [(rowid, index_text(body)) for rowid, body in rows]


async def _tokens(rows: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    return await text_work_in_runs(rows, lambda row: len(row[1]), _tokenized)


async def _replace(
    session: AsyncSession,
    table: str,
    rowids: Sequence[int],
    read: Mapping[int, str],
    tokens: Mapping[int, str],
) -> None:
    """Index again the rows of `rowids` still in `table` (inside the batch's write transaction): with
    `tokens` where the text is still the one `read`, tokenized anew where it changed meanwhile. A row
    whose source is gone keeps its entry, which nothing could make again."""
    params: dict[str, object] = {}
    present = await session.execute(
        text(f"SELECT rowid FROM {table} WHERE rowid IN ({in_list('r', rowids, params)})"), params
    )
    current = await TEXTS[table](session, [int(row[0]) for row in present])
    changed = [(rowid, body) for rowid, body in current.items() if read.get(rowid) != body]
    rows = {rowid: tokens[rowid] for rowid in current if read.get(rowid) == current[rowid]}
    rows.update(await _tokens(changed))
    await unindex_rows(session, table, sorted(rows))
    await index_rows_tokenized(session, table, sorted(rows.items()))


@dataclass(frozen=True, slots=True)
class Batch:
    """A batch read and tokenized, not written yet: the stamp it was read at, its rowids, and for a
    table of texts each row's text as read and its tokens."""

    stamp: IndexStamp
    rowids: list[int]
    read: dict[int, str]
    tokens: dict[int, str]


async def read_batch(db: Database, batch_rows: int = BATCH_ROWS) -> Batch | None:
    """The next batch, read and tokenized outside any write transaction; None when nothing is left."""
    async with db.read() as session:
        stamp = await read_stamp(session)
        if not stamp.pending:
            return None
        rowids = await _next_rowids(session, stamp.table, stamp.cursor, batch_rows)
        read = await TEXTS[stamp.table](session, rowids) if stamp.table in TEXTS and rowids else {}
    if stamp.table == TABLES[0] and stamp.cursor == 0:
        log.info(
            "full-text re-index: rows indexed by version %d are indexed again by version %d",
            stamp.version,
            INDEX_VERSION,
        )
    rowids = _within_chars(rowids, read)
    read = {rowid: read[rowid] for rowid in rowids if rowid in read}
    return Batch(stamp, rowids, read, dict(await _tokens(sorted(read.items()))))


async def write_batch(db: Database, batch: Batch) -> int:
    """Write `batch` with the cursor past it, in one transaction; how many rows it re-indexed (0 when
    it only moved to the next table, or when the stamp moved since the batch was read: another process
    wrote that batch, and the next is read again)."""
    stamp, rowids = batch.stamp, batch.rowids
    async with db.write() as session:
        if await read_stamp(session) != stamp:
            return 0
        if not rowids:
            await _save(session, _after_table(stamp))
            return 0
        if stamp.table == WINDOWS_FTS:
            await rebuild_windows(session, rowids)
        else:
            await _replace(session, stamp.table, rowids, batch.read, batch.tokens)
        await _save(session, replace(stamp, cursor=rowids[-1]))
    return len(rowids)


async def reindex_batch(db: Database, batch_rows: int = BATCH_ROWS) -> int | None:
    """Re-index the next batch of full-text rows; how many it did (see `write_batch`), or None when
    nothing is left to do."""
    batch = await read_batch(db, batch_rows)
    return None if batch is None else await write_batch(db, batch)


def _after_table(stamp: IndexStamp) -> IndexStamp:
    """The stamp once `stamp.table` is done: the next table from its start, or this version's."""
    following = TABLES.index(stamp.table) + 1
    if following < len(TABLES):
        log.info("full-text re-index: %s done, %s next", stamp.table, TABLES[following])
        return IndexStamp(stamp.version, TABLES[following])
    log.info("full-text re-index done: every row is indexed by version %d", INDEX_VERSION)
    return IndexStamp(INDEX_VERSION)


async def reindex(db: Database, batch_rows: int = BATCH_ROWS) -> int:
    """Re-index batch after batch until nothing is left; how many rows it re-indexed."""
    done = 0
    while (count := await reindex_batch(db, batch_rows)) is not None:
        done += count
    return done
