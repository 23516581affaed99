"""The FTS5 full-text indexes over jieba tokens. User text only ever reaches MATCH as quoted terms."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Literal

from sqlalchemy import Connection, TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.offload import text_work_in_runs
from memory.storage.sql import in_list
from memory.text import INDEX_VERSION, index_text, normalize, search_terms, word_terms

INDEX_JOB = "fts_reindex"
"""The `job_state` row (chat 0) stamping the full-text indexes: `data["version"]` is the INDEX_VERSION
every row is indexed by (a database without the row predates the stamp: version 1); while a re-index is
under way, `data["table"]` and the row's `cursor` say how far it got (memory.reindex)."""


def stamp_new_index(connection: Connection) -> None:
    """Stamp a database just created (inside its creating transaction): its indexes hold nothing yet,
    so every row will be indexed by this version's tokens."""
    connection.execute(
        text("INSERT INTO job_state(job, chat_id, cursor, last_run, data) VALUES (:job, 0, 0, 0, :data)"),
        {"job": INDEX_JOB, "data": json.dumps({"version": INDEX_VERSION})},
    )


def quote_term(term: str) -> str:
    """One FTS5 string literal: the term searched as text, whatever operators it contains."""
    return '"' + term.replace('"', '""') + '"'


def match_expression(query: str, mode: Literal["any", "all"] = "any") -> str | None:
    """An FTS5 MATCH expression for a user query, or None when it has no searchable word."""
    terms = search_terms(query)
    if not terms:
        return None
    joiner = " OR " if mode == "any" else " AND "
    return joiner.join(quote_term(term) for term in terms)


def phrase_expression(text: str) -> str | None:
    """An FTS5 MATCH expression for `text` as one phrase (its words in order), or None when it has no
    searchable word. The phrase is of jieba's words alone, which the index holds in their order (the
    new-word pieces follow them)."""
    terms = word_terms(text)
    return quote_term(" ".join(terms)) if terms else None


def term_expression(term: str) -> str | None:
    """An FTS5 MATCH expression for the texts holding `term` however jieba cut it there: kept whole
    (one token: "内卷" in "其实内卷指的是…", though alone it is cut 内|卷), or cut as alone (the phrase of
    those words); None when it has no searchable word."""
    phrase = phrase_expression(term)
    if phrase is None:
        return None
    return " OR ".join(dict.fromkeys((quote_term(normalize(term)), phrase)))


def searchable(alias: str) -> str:
    """An SQL condition: the `messages` row `alias` is in the full-text index. A rowid lookup per
    row; `id IN (SELECT rowid FROM messages_fts)` would list the whole index each time."""
    return f"EXISTS (SELECT 1 FROM messages_fts WHERE messages_fts.rowid = {alias}.id)"


async def index_rows(session: AsyncSession, table: str, rows: Iterable[tuple[int, str]]) -> None:
    """Add (rowid, raw text) pairs to an FTS table, tokenized with jieba (off the event loop for long
    text, run by run, so that a job cancelled at shutdown stops after the run in hand; only the
    tokens, not the session, go to the worker threads)."""
    tokenized = await text_work_in_runs(list(rows), _body_chars, _tokenized)
    await index_rows_tokenized(session, table, tokenized)


def _body_chars(row: tuple[int, str]) -> int:
    return len(row[1])


def _tokenized(rows: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    return [(rowid, index_text(body)) for rowid, body in rows]


async def index_rows_tokenized(session: AsyncSession, table: str, rows: Iterable[tuple[int, str]]) -> None:
    """Add (rowid, space-joined tokens) pairs to an FTS table as they are."""
    params = [{"rowid": rowid, "body": body} for rowid, body in rows]
    if params:
        await session.execute(insert_statement(table), params)


async def unindex_rows(session: AsyncSession, table: str, rowids: Sequence[int]) -> None:
    if rowids:
        await session.execute(delete_statement(table), [{"rowid": r} for r in rowids])


def insert_statement(table: str) -> TextClause:
    """Adds one row (`:rowid`, `:body` as space-joined tokens) to an FTS table; for callers on a
    plain connection, as `index_rows_tokenized` runs it."""
    return text(f"INSERT INTO {table}(rowid, body) VALUES (:rowid, :body)")


def delete_statement(table: str) -> TextClause:
    """Takes row `:rowid` out of an FTS table, as `unindex_rows` runs it."""
    return text(f"DELETE FROM {table} WHERE rowid = :rowid")


LIST_SCOPE_BELOW = 20_000
"""A search scope of fewer rows than this is listed once per search (a few milliseconds at most);
a larger one has each full-text match looked up by its id instead, in proportion to the matches."""


async def scope_is_small(session: AsyncSession, rows: str, where: str, params: dict[str, object]) -> bool:
    """Whether fewer than `LIST_SCOPE_BELOW` rows of table `rows` meet the trusted condition `where`
    (counting stops there, so the answer costs the same however large the scope)."""
    found = await session.execute(
        text(f"SELECT count(*) FROM (SELECT 1 FROM {rows} WHERE {where} LIMIT {LIST_SCOPE_BELOW})"), params
    )
    return int(found.scalar_one()) < LIST_SCOPE_BELOW


async def bm25_search(
    session: AsyncSession,
    table: str,
    match: str,
    limit: int,
    rows: str = "",
    where: str = "",
    **params: object,
) -> list[tuple[int, float]]:
    """Rowids and BM25 scores (higher is better) for a MATCH expression built by `match_expression`.

    `rows` and `where` (trusted SQL) limit the rowids ranked to those whose row of table `rows` (the
    row with that `id`) meets the condition `where`, e.g. the messages of the chats in scope.
    """
    scope = ""
    if rows and await scope_is_small(session, rows, where, params):
        # The unary plus keeps SQLite from handing the rowid list to FTS5, which would then run the
        # whole MATCH once per allowed rowid (about a hundred times slower on a chat of 500 messages).
        scope = f"AND +rowid IN (SELECT id FROM {rows} WHERE {where})"
    elif rows:
        # Listing a large scope (every message of a busy chat) would cost more than the search.
        scope = f"AND EXISTS (SELECT 1 FROM {rows} WHERE {rows}.id = {table}.rowid AND {where})"
    sql = text(
        f"SELECT rowid, -bm25({table}) AS score FROM {table} "
        f"WHERE {table} MATCH :match {scope} ORDER BY score DESC LIMIT :limit"
    )
    result = await session.execute(sql, {"match": match, "limit": limit, **params})
    return [(int(row[0]), float(row[1])) for row in result]


async def indexed_tokens(session: AsyncSession, table: str, rowids: Sequence[int]) -> dict[int, list[str]]:
    """The tokens an FTS table holds for each rowid (no re-segmentation)."""
    if not rowids:
        return {}
    params: dict[str, object] = {}
    names = in_list("r", rowids, params)
    rows = await session.execute(text(f"SELECT rowid, body FROM {table} WHERE rowid IN ({names})"), params)
    return {int(row[0]): str(row[1]).split() for row in rows}
