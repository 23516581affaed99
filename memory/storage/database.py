"""One SQLite database file: a reader pool, a single writer, and pragmas on every connection.

Writes go through one connection whose transactions start with BEGIN IMMEDIATE, so in-process
writers queue on the pool and other processes wait on busy_timeout instead of failing mid-transaction.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, ExitStack, asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from alembic.util import CommandError
from sqlalchemy import event
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from memory.storage import migrate
from memory.storage.lock_wait import LockWait, lock_wait_ms

DB_FILENAME = "qunyi.db"
PRIVATE_FOLDER_MODE = 0o700
"""A data directory (or backup) Qunyi makes is its owner's alone: it holds every chat's messages, private
ones too, and on a shared machine the umask's usual 0755 let every local user read them."""


class DatabaseLocked(RuntimeError):
    """Another process held the database longer than busy_timeout allows."""


class DatabaseWriteFailed(RuntimeError):
    """The machine refused a write (disk full, read-only file, I/O error); nothing of it was kept."""


# How SQLite says the machine, not the statement, failed a write.
_MACHINE_FAILURES = ("disk is full", "readonly database", "disk i/o error")


def write_refused(
    path: Path, busy_timeout_ms: int, error: BaseException, waited: float
) -> DatabaseLocked | DatabaseWriteFailed | None:
    """What a write to `path` that SQLite failed with `error` after `waited` seconds raises:
    DatabaseLocked when another connection held the file, DatabaseWriteFailed when the machine refused
    the write, None for any other failure (the statement's own)."""
    said = str(error).lower()
    if "locked" in said or "busy" in said:
        waited_ms = round(waited * 1000)
        if waited_ms >= busy_timeout_ms:
            return DatabaseLocked(f"database {path} stayed locked for over {busy_timeout_ms} ms")
        # SQLite refuses some lock conflicts at once instead of calling the busy handler.
        return DatabaseLocked(
            f"database {path} was locked by another connection; SQLite refused after {waited_ms} ms"
        )
    if any(failure in said for failure in _MACHINE_FAILURES):
        return DatabaseWriteFailed(f"database {path} could not be written: {error}")
    return None


class DatabaseUnavailable(RuntimeError):
    """The database cannot be opened: its folder cannot be made, or the file is not a Qunyi database."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class NotEnoughSpace(RuntimeError):
    """The disk holding the database has too little free space for VACUUM (`qunyi compact`) or for a
    schema upgrade that rebuilds tables; nothing was changed."""

    def __init__(self, folder: Path, needed: int, free: int) -> None:
        super().__init__(f"{folder}: {needed} bytes needed, {free} free")
        self.folder = folder
        self.needed = needed
        self.free = free


class DatabaseMissing(DatabaseUnavailable):
    """There is no database file, and the caller asked not to create one (or not to upgrade it, which
    creating it would be)."""


def open_failure(path: Path, exc: BaseException | None) -> DatabaseUnavailable:
    """The error for the database at `path` SQLite could not open (`exc`). In a folder that cannot be
    written (a read-only mount, a backup copied without write permission) SQLite's own words, "unable to
    open database file", name no cause: reading a database in WAL mode makes its `-shm` file there."""
    reason = str(exc)
    if "unable to open database file" in reason and path.is_file() and not os.access(path.parent, os.W_OK):
        reason += (
            f": its folder {path.parent} cannot be written, and SQLite makes {path.name}-shm there even "
            "to read it; make the folder writable, or copy the data directory to one that is"
        )
    return DatabaseUnavailable(path, reason)


def require_database_file(path: Path, *, may_be_missing: bool = False) -> None:
    """Raise DatabaseMissing when there is nothing at `path` (unless `may_be_missing`: it is to be made)
    and DatabaseUnavailable when something other than a file is there (a folder), which no command
    could open or make a database in."""
    # `exists` before `is_file`: another process may make the file between the two looks, and a file
    # that appears is then no folder.
    if not path.exists():
        if not may_be_missing:
            raise DatabaseMissing(path, "no database file")
        return
    if not path.is_file():
        raise DatabaseUnavailable(path, "it is not a file (a folder is in its place?): move it away")


class DatabaseBehind(DatabaseUnavailable):
    """The database's schema is older than this version's, and the caller asked not to upgrade it:
    `current` are its revisions, `heads` those an upgrade brings it to."""

    def __init__(self, path: Path, behind: migrate.SchemaBehind) -> None:
        super().__init__(path, str(behind))
        self.current = behind.current
        self.heads = behind.heads


def _set_pragmas(busy_timeout_ms: int, make_wal: bool) -> Any:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if make_wal:
            cursor.execute("PRAGMA journal_mode=WAL")  # a no-op: `_prepare` made the file WAL
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return on_connect


def _begin_read(connection: Any) -> None:
    connection.exec_driver_sql("BEGIN")


# The write transaction under way in this task, told the busy timeout it began with.
_BEGUN: ContextVar[LockWait | None] = ContextVar("qunyi_write_begun", default=None)
_BUSY_TIMEOUT_KEY = "qunyi_busy_timeout_ms"


def _begin_write(busy_timeout_ms: int) -> Any:
    """BEGIN IMMEDIATE, first setting the connection's busy timeout to the one this write may wait
    (`lock_wait_ms`): the setting lasts on the connection, so it is changed only when it differs."""

    def on_begin(connection: Any) -> None:
        wait_ms = lock_wait_ms(busy_timeout_ms)
        if connection.info.get(_BUSY_TIMEOUT_KEY, busy_timeout_ms) != wait_ms:
            connection.exec_driver_sql(f"PRAGMA busy_timeout={wait_ms}")
            connection.info[_BUSY_TIMEOUT_KEY] = wait_ms
        began = _BEGUN.get()
        if began is not None:
            began.ms = wait_ms
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return on_begin


def _use_wal(path: Path, busy_timeout_ms: int) -> None:
    """Make the file WAL (a lasting property of the file) before any pooled connection opens it.

    Switching the journal mode needs the file to itself, and SQLite refuses it at once, without
    calling the busy handler, while another connection holds a lock (another process opening the
    new file together with this one, still checking its schema): so the switch is retried until the
    busy timeout runs out, and skipped when the file is WAL already."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    connection = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None)
    try:
        while True:
            try:
                if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    connection.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
    finally:
        connection.close()


def _hold(lock: AbstractContextManager[object], held: ExitStack, data_dir: Path, path: Path) -> None:
    try:
        held.enter_context(lock)
    except OSError as exc:
        raise DatabaseUnavailable(path, f"cannot lock {data_dir}: {exc.strerror or exc}") from exc


def _changes_on_upgrade(path: Path, busy_timeout_ms: int) -> bool:
    """Whether `migrate.upgrade` would write the file: it is not there yet, or its schema is behind."""
    if not path.is_file():
        return True
    try:
        migrate.check(path, busy_timeout_ms)
    except migrate.SchemaBehind:
        return True
    return False


def _prepare(
    data_dir: Path,
    path: Path,
    create: bool,
    busy_timeout_ms: int,
    upgrade: bool,
    lock: AbstractContextManager[object] | None,
    upgrade_lock: AbstractContextManager[object] | None,
    held: ExitStack,
) -> None:
    require_database_file(path, may_be_missing=create and upgrade)
    try:
        data_dir.mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
    except OSError as exc:
        reason = f"cannot create the folder {data_dir}: {exc.strerror or exc}"
        raise DatabaseUnavailable(path, reason) from exc
    if lock is not None:
        _hold(lock, held, data_dir, path)
    try:
        if upgrade:
            with ExitStack() as upgrading:
                if upgrade_lock is not None and _changes_on_upgrade(path, busy_timeout_ms):
                    _hold(upgrade_lock, upgrading, data_dir, path)
                migrate.upgrade(path, busy_timeout_ms)
                _use_wal(path, busy_timeout_ms)
        else:
            migrate.check(path, busy_timeout_ms)
    except sqlite3.DatabaseError as exc:
        raise open_failure(path, exc) from exc
    except DBAPIError as exc:
        raise open_failure(path, exc.orig) from exc
    except migrate.SchemaBehind as exc:
        raise DatabaseBehind(path, exc) from exc
    except (migrate.NewerSchema, CommandError) as exc:
        raise DatabaseUnavailable(path, str(exc)) from exc
    except NotEnoughSpace as exc:
        reason = (
            f"too little free disk to upgrade its schema (it was left as it was; free some and retry): {exc}"
        )
        raise DatabaseUnavailable(path, reason) from exc


class Database:
    """The Qunyi database under a data directory. Use `await Database.open(data_dir)`."""

    def __init__(
        self,
        path: Path,
        busy_timeout_ms: int = 10_000,
        *,
        upgraded: bool = True,
        held: ExitStack | None = None,
    ) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._held = held or ExitStack()
        url = f"sqlite+aiosqlite:///{path}"
        self._reader = create_async_engine(url, pool_size=4, max_overflow=4)
        self._writer = create_async_engine(url, pool_size=1, max_overflow=0, pool_timeout=600)
        for engine in (self._reader, self._writer):
            event.listen(engine.sync_engine, "connect", _set_pragmas(busy_timeout_ms, upgraded))
        event.listen(self._reader.sync_engine, "begin", _begin_read)
        event.listen(self._writer.sync_engine, "begin", _begin_write(busy_timeout_ms))
        self._read_sessions = async_sessionmaker(self._reader, expire_on_commit=False)
        self._write_sessions = async_sessionmaker(self._writer, expire_on_commit=False)

    @classmethod
    async def open(
        cls,
        data_dir: Path,
        busy_timeout_ms: int = 10_000,
        create: bool = True,
        *,
        upgrade: bool = True,
        lock: AbstractContextManager[object] | None = None,
        upgrade_lock: AbstractContextManager[object] | None = None,
    ) -> Database:
        """Migrate the schema and connect; with `create`, make the directory and database if missing.

        Without `upgrade` nothing is written on opening (for a dry run): no database is created, and a
        schema behind this version's raises DatabaseBehind instead of being upgraded. `lock`, when given,
        is entered once the folder is there, before the schema is read or upgraded, and exited when the
        database closes (the CLI's hold on the data directory for writing). `upgrade_lock` is held only
        while opening changes the file (creating it, or upgrading a schema behind this version's): a
        reader's hold on the data directory for as long as it writes.

        Raises DatabaseMissing when `create` is false and there is no database file, and
        DatabaseUnavailable when the folder cannot be made or locked or the file is not a usable
        database; whatever `lock` raises on entering, such as the data directory being taken."""
        path = data_dir / DB_FILENAME
        held = ExitStack()
        try:
            await asyncio.to_thread(
                _prepare, data_dir, path, create, busy_timeout_ms, upgrade, lock, upgrade_lock, held
            )
        except BaseException:
            held.close()
            raise
        return cls(path, busy_timeout_ms, upgraded=upgrade, held=held)

    @property
    def writer_engine(self) -> AsyncEngine:
        return self._writer

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A session for reads; its transaction is rolled back at the end."""
        async with self._read_sessions() as session:
            yield session

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """A session in one write transaction: committed on success, rolled back on any error or
        cancellation, so nothing is ever half-written. Another process's lock is waited out for the
        busy timeout, or less inside `writes_give_up_by`."""
        started = time.monotonic()
        began = LockWait(self.busy_timeout_ms)
        token = _BEGUN.set(began)
        try:
            async with self._write_sessions() as session, session.begin():
                yield session
        except OperationalError as exc:
            waited = time.monotonic() - started
            refused = write_refused(self.path, began.ms, exc.orig or exc, waited)
            if refused is not None:
                raise refused from exc
            raise
        finally:
            _BEGUN.reset(token)

    async def close(self) -> None:
        """Close every connection, then let go of what `open` was given to hold. A cancellation (Ctrl-C
        while a command finishes) waits for the closing to end, then goes on: a connection cut off while
        it closed was logged as an error with a traceback, and the connections after it left open."""
        closing = asyncio.ensure_future(self._close())
        try:
            await asyncio.shield(closing)
        except asyncio.CancelledError:
            await asyncio.wait([closing])  # a second cancellation gives up waiting
            raise

    async def _close(self) -> None:
        try:
            await self._reader.dispose()
            await self._writer.dispose()
        finally:
            self._held.close()
