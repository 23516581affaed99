"""Bring a database file to the newest schema with Alembic (all heads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, create_engine, event

SCRIPT_LOCATION = str(Path(__file__).parent / "migrations")


class NewerSchema(RuntimeError):
    """The database is at a schema revision this version does not know: a newer Qunyi wrote it."""

    def __init__(self, revisions: list[str]) -> None:
        super().__init__(
            f"its schema revision {', '.join(revisions)} is newer than this version of Qunyi knows "
            "(a newer Qunyi wrote it); run that version on it, or point --data-dir elsewhere"
        )
        self.revisions = revisions


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    return config


def _driver_autocommit(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None


def _begin(connection: Connection) -> None:
    connection.exec_driver_sql("BEGIN")


def upgrade(path: Path) -> None:
    """Create or upgrade the schema of the SQLite file at `path` (blocking; run it in a thread).

    The whole upgrade is one transaction, DDL included (the sqlite3 driver would otherwise commit
    each CREATE on its own), so an upgrade interrupted at any point leaves the file at its previous
    revision and the next upgrade starts over cleanly. Raises NewerSchema, changing nothing, when the
    file is at a revision this version does not know."""
    engine = create_engine(f"sqlite:///{path}")
    event.listen(engine, "connect", _driver_autocommit)
    event.listen(engine, "begin", _begin)
    try:
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            known = {script.revision for script in ScriptDirectory.from_config(config).walk_revisions()}
            unknown = sorted(set(MigrationContext.configure(connection).get_current_heads()) - known)
            if unknown:
                raise NewerSchema(unknown)
            command.upgrade(config, "heads")
    finally:
        engine.dispose()
