"""Small SQL helpers: IN-lists for hand-written queries, the row count of a write, and rows whose JSON
list of ids names some of a set."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import CursorResult, Result, Select, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

MAX_INT = 2**63 - 1  # the largest integer SQLite stores: a larger one fails the statement (OverflowError)


def stored_int(text: str) -> int | None:
    """The row id or count `text` writes in ASCII digits, when SQLite can hold it; None otherwise
    (`str.isdigit` also accepts "²", which `int` refuses)."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        return None
    number = int(text)
    return number if number <= MAX_INT else None


def in_list(name: str, values: Sequence[object], params: dict[str, object]) -> str:
    """Bind `values` as `:name0, :name1, …` into `params` and return that list for an `IN (…)`
    (`NULL` when empty, which matches nothing)."""
    names = []
    for i, value in enumerate(values):
        params[f"{name}{i}"] = value
        names.append(f":{name}{i}")
    return ", ".join(names) or "NULL"


def json_values(values: Sequence[object]) -> Select[Any]:
    """`values` as a subquery for an `IN`, bound as one JSON parameter: any number of them binds one
    SQL variable (SQLite refuses a statement with more than 32766)."""
    return select(func.json_each(json.dumps(list(values))).table_valued("value").c.value)


def rows_changed(result: Result[Any]) -> int:
    """How many rows an UPDATE, DELETE or INSERT executed through the ORM session changed."""
    return int(cast(CursorResult[Any], result).rowcount or 0)


async def rows_naming(session: AsyncSession, table: str, column: str, ids: Sequence[int]) -> list[int]:
    """The ids of the rows of `table` whose JSON list `column` holds any of `ids` (names are the
    caller's own constants, never user input)."""
    if not ids:
        return []
    query = text(
        f"SELECT DISTINCT t.id FROM {table} t, json_each(t.{column}) j "
        "WHERE j.value IN (SELECT value FROM json_each(:ids))"
    )
    return [int(r[0]) for r in await session.execute(query, {"ids": json.dumps(sorted(set(ids)))})]
