"""Small SQL helpers: IN-lists for hand-written queries, and the row count of a write."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import CursorResult, Result


def in_list(name: str, values: Sequence[object], params: dict[str, object]) -> str:
    """Bind `values` as `:name0, :name1, …` into `params` and return that list for an `IN (…)`
    (`NULL` when empty, which matches nothing)."""
    names = []
    for i, value in enumerate(values):
        params[f"{name}{i}"] = value
        names.append(f":{name}{i}")
    return ", ".join(names) or "NULL"


def rows_changed(result: Result[Any]) -> int:
    """How many rows an UPDATE, DELETE or INSERT executed through the ORM session changed."""
    return int(cast(CursorResult[Any], result).rowcount or 0)
