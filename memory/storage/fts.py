"""The FTS5 full-text indexes over jieba tokens. User text only ever reaches MATCH as quoted terms."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.offload import text_work
from memory.storage.sql import in_list
from memory.text import index_text, search_terms


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
    searchable word."""
    terms = search_terms(text)
    return quote_term(" ".join(terms)) if terms else None


def searchable(alias: str) -> str:
    """An SQL condition: the `messages` row `alias` is in the full-text index. A rowid lookup per
    row; `id IN (SELECT rowid FROM messages_fts)` would list the whole index each time."""
    return f"EXISTS (SELECT 1 FROM messages_fts WHERE messages_fts.rowid = {alias}.id)"


async def index_rows(session: AsyncSession, table: str, rows: Iterable[tuple[int, str]]) -> None:
    """Add (rowid, raw text) pairs to an FTS table, tokenized with jieba (off the event loop for long
    text; only the tokens, not the session, go to the worker thread)."""
    bodies = list(rows)
    tokenized = await text_work(sum(len(body) for _, body in bodies), _tokenized, bodies)
    await index_rows_tokenized(session, table, tokenized)


def _tokenized(rows: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    return [(rowid, index_text(body)) for rowid, body in rows]


async def index_rows_tokenized(session: AsyncSession, table: str, rows: Iterable[tuple[int, str]]) -> None:
    """Add (rowid, space-joined tokens) pairs to an FTS table as they are."""
    params = [{"rowid": rowid, "body": body} for rowid, body in rows]
    if params:
        await session.execute(text(f"INSERT INTO {table}(rowid, body) VALUES (:rowid, :body)"), params)


async def unindex_rows(session: AsyncSession, table: str, rowids: Sequence[int]) -> None:
    if rowids:
        await session.execute(
            text(f"DELETE FROM {table} WHERE rowid = :rowid"), [{"rowid": r} for r in rowids]
        )


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
    # Each match is looked up by its id: work in proportion to the matches, not to the scope. A list of
    # the allowed rowids (`rowid IN (SELECT id FROM messages WHERE chat_id = …)`) was built from every
    # message of the chats at each search, however rare the words. The scope never reaches FTS5 as a
    # rowid constraint either, which would run the whole MATCH once per allowed rowid.
    scope = f"AND EXISTS (SELECT 1 FROM {rows} WHERE {rows}.id = {table}.rowid AND {where})" if rows else ""
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
