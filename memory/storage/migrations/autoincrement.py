"""Rebuilding a table with or without `AUTOINCREMENT`, for the migrations that make ids never handed out
twice (0021_chat_history_autoincrement, 0022_ids_autoincrement).

SQLite gives a new row of a rowid table without `AUTOINCREMENT` the id of the highest row once that row is
deleted. With it, ids come from `sqlite_sequence`, which never goes down. A table cannot be altered into
`AUTOINCREMENT`: it is rebuilt (alembic's batch mode copies its rows, ids and indexes into a new table,
drops the old one and renames the new one). Dropping the old table drops its triggers, and batch mode
cannot reflect an index on an expression (`uq_jargon_scope_normalized`), so both are read first and
those missing afterwards are created again from their SQL. Foreign keys are not enforced on the
migration connection, so dropping a parent table cascades to nothing, and the rows naming it by id name
the copy after the rename.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

from alembic import op
from sqlalchemy import text

from memory.storage.compact import space_of
from memory.storage.database import NotEnoughSpace


def require_room_for_rebuild() -> None:
    """Raise NotEnoughSpace, before anything is changed, when the disk holding the database has less free
    space than rebuilding tables may take: the copy of the pages in use, written to the `-wal` file and
    then into the database file (the same bound `qunyi compact` checks; at most the whole database)."""
    connection = op.get_bind()
    file = connection.exec_driver_sql("PRAGMA main.database_list").fetchone()
    if file is None or not file[2]:
        return  # an in-memory database
    path = Path(file[2])

    def pragma(name: str) -> int:
        return int(connection.exec_driver_sql(f"PRAGMA {name}").scalar_one())

    space = space_of(path, pragma("page_size"), pragma("page_count"), pragma("freelist_count"))
    if not space.enough_room:
        raise NotEnoughSpace(path.parent, space.needed, space.disk_free)


def _schema_of(table: str) -> dict[str, str]:
    """The triggers and indexes (those written as SQL, not a constraint's own) of `table`, by name."""
    rows = op.get_bind().exec_driver_sql(
        "SELECT name, sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND tbl_name = ? "
        "AND sql IS NOT NULL ORDER BY type, name",
        (table,),
    )
    return {str(name): str(sql) for name, sql in rows}


def rebuild(table: str, *, autoincrement: bool, floors: Sequence[str] = ()) -> None:
    """Rebuild `table` (its rows, ids, indexes and triggers kept) with or without `AUTOINCREMENT`. With it,
    the id sequence starts above the table's highest id and every id `floors` name: SQL queries returning
    one integer (or NULL), the ids other tables, JSON lists or logs still hold for rows of `table`."""
    before = _schema_of(table)
    with warnings.catch_warnings():
        # Batch mode skips expression indexes with a warning; they are created again below.
        warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index")
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
        ):
            pass
    after = _schema_of(table)
    for name, sql in before.items():
        if name not in after:
            op.execute(sql)
    if not autoincrement:
        return
    highest = ", ".join(f"coalesce(({query}), 0)" for query in (f"SELECT max(id) FROM {table}", *floors))
    op.execute(text("DELETE FROM sqlite_sequence WHERE name = :table").bindparams(table=table))
    op.execute(
        text(f"INSERT INTO sqlite_sequence(name, seq) SELECT :table, max({highest}, 0)").bindparams(
            table=table
        )
    )
