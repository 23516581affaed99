"""Every table of a Qunyi database as sorted rows, to compare two databases row for row."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from memory.storage import Database

FTS_SHADOWS = ("_config", "_content", "_data", "_docsize", "_idx")


async def all_tables(db: Database, columns: dict[str, str] | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows, sorted; a full-text index as its (rowid, tokens), not its inner tables.
    `columns` names the columns compared of a table when not all of them (one set from the wall clock)."""
    found: dict[str, list[tuple[Any, ...]]] = {}
    async with db.read() as session:
        names = (await session.scalars(text("SELECT name FROM sqlite_master WHERE type = 'table'"))).all()
        for name in names:
            if name.endswith(FTS_SHADOWS) or name == "alembic_version":
                continue
            chosen = "rowid, *" if name.endswith("_fts") else (columns or {}).get(name, "*")
            rows = await session.execute(text(f'SELECT {chosen} FROM "{name}"'))
            found[name] = sorted((tuple(row) for row in rows), key=repr)
    return found
