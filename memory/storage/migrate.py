"""Bring a database file to the newest schema with Alembic (all heads)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event

from memory.storage.fts import stamp_new_index

SCRIPT_LOCATION = str(Path(__file__).parent / "migrations")


class NewerSchema(RuntimeError):
    """The database is at a schema revision this version does not know: a newer Qunyi wrote it."""

    def __init__(self, revisions: list[str]) -> None:
        super().__init__(
            f"its schema revision {', '.join(revisions)} is newer than this version of Qunyi knows "
            "(a newer Qunyi wrote it); run that version on it, or point --data-dir elsewhere"
        )
        self.revisions = revisions


def newest(revisions: Iterable[str]) -> str:
    """The newest of `revisions` (the rows of alembic_version, or this version's heads: one per branch of
    the chain), as messages name a schema; `none` for a database without any."""
    return max(revisions, default="none")


class SchemaBehind(RuntimeError):
    """The database is at an older schema revision than this version's, and was not to be upgraded:
    `current` are its revisions, `heads` those an upgrade brings it to."""

    def __init__(self, current: list[str], heads: list[str]) -> None:
        super().__init__(
            f"its schema is at revision {newest(current)}, older than this version's {newest(heads)}"
        )
        self.current = current
        self.heads = heads


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    return config


def _driver_autocommit(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None


def _engine(path: Path, busy_timeout_ms: int, begin: str) -> Engine:
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": busy_timeout_ms / 1000})
    event.listen(engine, "connect", _driver_autocommit)
    event.listen(engine, "begin", lambda connection: connection.exec_driver_sql(begin))
    return engine


def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def _known(scripts: ScriptDirectory) -> set[str]:
    return {script.revision for script in scripts.walk_revisions()}


def _checked_heads(connection: Connection, known: set[str]) -> set[str]:
    current = set(MigrationContext.configure(connection).get_current_heads())
    if unknown := sorted(current - known):
        raise NewerSchema(unknown)
    return current


def _read_heads(path: Path, busy_timeout_ms: int, known: set[str]) -> set[str]:
    """The revisions of the file at `path`, read without taking its write lock."""
    reader = _engine(path, busy_timeout_ms, "BEGIN")
    try:
        with reader.begin() as connection:
            return _checked_heads(connection, known)
    finally:
        reader.dispose()


def _behind(scripts: ScriptDirectory, current: Iterable[str]) -> bool:
    return any(scripts.iterate_revisions("heads", tuple(current)))


def schema_state(current: Iterable[str]) -> str:
    """How a database at revisions `current` (its alembic_version rows: one per branch of the chain)
    stands against this version's migrations, for people: up to date or behind, and its newest one."""
    heads = set(current)
    state = "behind, upgraded at the next start" if _behind(_scripts(), heads) else "up to date"
    return f"{state}, newest {newest(heads)}"


def check(path: Path, busy_timeout_ms: int = 10_000) -> None:
    """Read the schema revision of the SQLite file at `path`, changing nothing (blocking; run it in a
    thread). Raises NewerSchema when the file is at a revision this version does not know, and
    SchemaBehind when `upgrade` would change it."""
    scripts = _scripts()
    current = _read_heads(path, busy_timeout_ms, _known(scripts))
    if _behind(scripts, current):
        raise SchemaBehind(sorted(current), sorted(scripts.get_heads()))


def upgrade(path: Path, busy_timeout_ms: int = 10_000) -> None:
    """Create or upgrade the schema of the SQLite file at `path` (blocking; run it in a thread).

    The whole upgrade is one transaction, DDL included (the sqlite3 driver would otherwise commit
    each CREATE on its own), so an upgrade interrupted at any point leaves the file at its previous
    revision and the next upgrade starts over cleanly. It holds the write lock from its first read,
    so two processes opening a new file together take turns (the second finds it current) instead of
    deadlocking; a file already current is only read. A file created here has its full-text indexes
    stamped as of this version's tokens (`stamp_new_index`): nothing in it is to re-index. Raises
    NewerSchema, changing nothing, when the file is at a revision this version does not know."""
    config = alembic_config()
    scripts = ScriptDirectory.from_config(config)
    known = _known(scripts)
    if not _behind(scripts, _read_heads(path, busy_timeout_ms, known)):
        return
    writer = _engine(path, busy_timeout_ms, "BEGIN IMMEDIATE")
    try:
        with writer.begin() as connection:
            created = not _checked_heads(connection, known)
            config.attributes["connection"] = connection
            command.upgrade(config, "heads")
            if created:
                stamp_new_index(connection)
    finally:
        writer.dispose()
