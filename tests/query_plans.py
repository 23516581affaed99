"""SQLite's plan for every statement a block of code runs (and how many rows each returns): how tests
check that a query seeks instead of reading a whole chat (plans do not depend on the table sizes: no
ANALYZE statistics are kept)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event

from memory.storage import Database


@dataclass(frozen=True, slots=True)
class Step:
    """One line of EXPLAIN QUERY PLAN: its id, the id of the step it belongs to, what it does."""

    id: int
    parent: int
    detail: str


def listed_subqueries(steps: list[Step]) -> list[str]:
    """What each subquery SQLite runs once to build an IN-list reads (its steps' details)."""
    lists = {s.id for s in steps if s.detail.startswith("LIST SUBQUERY")}
    return [s.detail for s in steps if s.parent in lists]


@contextmanager
def selects_run(db: Database) -> Iterator[list[tuple[str, Any]]]:
    """Collect (statement, parameters) for every SELECT run on `db` inside the block."""
    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            seen.append((statement, parameters))

    engines = [db._reader.sync_engine, db._writer.sync_engine]
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)


@contextmanager
def _read_only(db: Database) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(f"file:{db.path}?mode=ro", uri=True)
    try:
        yield connection
    finally:
        connection.close()


@contextmanager
def planned(db: Database) -> Iterator[list[tuple[str, list[Step]]]]:
    """Collect (statement, plan steps) for every SELECT run on `db` inside the block; the plans are
    filled in when the block ends."""
    plans: list[tuple[str, list[Step]]] = []
    with selects_run(db) as seen:
        yield plans
    with _read_only(db) as connection:
        for statement, parameters in seen:
            steps = connection.execute(f"EXPLAIN QUERY PLAN {statement}", parameters).fetchall()
            plans.append((statement, [Step(int(i), int(p), str(detail)) for i, p, _, detail in steps]))


@contextmanager
def largest_result(db: Database) -> Iterator[list[int]]:
    """The most rows any SELECT run on `db` inside the block returns, run again when the block ends (how
    a test checks that a page never reads a whole chat's members)."""
    largest: list[int] = []
    with selects_run(db) as seen:
        yield largest
    with _read_only(db) as connection:
        largest.append(max((len(connection.execute(s, p).fetchall()) for s, p in seen), default=0))
