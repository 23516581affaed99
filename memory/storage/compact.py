"""Giving the disk back after deletions: the free pages SQLite keeps inside the database file, and
VACUUM rewriting the file without them.

In WAL mode VACUUM builds a packed copy of the database in a temporary file, then writes every page of
it into the `-wal` file, which a checkpoint folds back into the database file (shrinking it) and
`wal_checkpoint(TRUNCATE)` then empties. Both the temporary copy and the `-wal` pages are about the
size of what the database holds, so the copy is made beside the database (not in /var/tmp or /tmp,
which may be another, smaller disk or memory) and one free-space check covers both. The whole VACUUM
is one transaction: stopped or crashed midway, the database stays as it was."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from memory.storage.database import DatabaseLocked, require_database_file, write_refused
from memory.storage.database import NotEnoughSpace as NotEnoughSpace  # its home beside the upgrade's errors

WAL_SUFFIX = "-wal"
WAL_HEADER_BYTES = 32
WAL_FRAME_HEADER_BYTES = 24  # before each page in the -wal file
PROGRESS_STEPS = 1000  # SQLite VM instructions between two looks at the stop event


@dataclass(frozen=True, slots=True)
class Space:
    """How much room a database takes (its file and `-wal` file on disk, and its pages), and the free
    space left on its disk."""

    file_bytes: int
    page_size: int
    pages: int
    free_pages: int
    disk_free: int

    @property
    def reclaimable(self) -> int:
        """The bytes of the free pages: at least what VACUUM gives back (it also packs half-empty
        pages)."""
        return self.free_pages * self.page_size

    @property
    def needed(self) -> int:
        """The free disk VACUUM needs beside the database: the temporary copy of the pages in use, and
        the same pages again, each with its frame header, in the `-wal` file."""
        in_use = self.pages - self.free_pages
        return in_use * self.page_size + WAL_HEADER_BYTES + in_use * (self.page_size + WAL_FRAME_HEADER_BYTES)

    @property
    def enough_room(self) -> bool:
        """Whether the disk has the room VACUUM needs."""
        return self.disk_free >= self.needed


@dataclass(frozen=True, slots=True)
class Compacted:
    """A finished VACUUM: the space before it, the bytes on disk after, how long it took, and whether
    the `-wal` file was emptied (not while another connection still reads an older view of the
    database: the packed pages then wait in the `-wal` file, and the file is as large as before or
    larger, until a checkpoint after that reader is done)."""

    before: Space
    bytes_after: int
    seconds: float
    wal_emptied: bool = True


class CompactStopped(Exception):
    """The VACUUM was stopped (its stop event set, e.g. by Ctrl-C) and rolled back."""


def on_disk(path: Path) -> int:
    """The bytes the database at `path` takes on disk: its file and its `-wal` file."""
    wal = path.with_name(path.name + WAL_SUFFIX)
    return sum(part.stat().st_size for part in (path, wal) if part.exists())


def free_space(folder: Path) -> int:
    """The bytes this process may still write on the disk holding `folder`."""
    return shutil.disk_usage(folder).free


def _connect(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    require_database_file(path)  # sqlite3 would make an empty database
    return sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None)


def _measure(connection: sqlite3.Connection, path: Path) -> Space:
    def pragma(name: str) -> int:
        return int(connection.execute(f"PRAGMA {name}").fetchone()[0])

    connection.execute("BEGIN")  # the page counts from one view of a file others may be writing
    try:
        pages, free_pages = pragma("page_count"), pragma("freelist_count")
    finally:
        connection.execute("COMMIT")
    return space_of(path, pragma("page_size"), pages, free_pages)


def space_of(path: Path, page_size: int, pages: int, free_pages: int) -> Space:
    """The `Space` of the database at `path` from its page counts (read by the caller, in a transaction
    it already has), with its size on disk and the free space of its disk."""
    return Space(on_disk(path), page_size, pages, free_pages, free_space(path.parent))


def measure(path: Path, busy_timeout_ms: int = 10_000) -> Space:
    """The space of the database at `path` and on its disk (blocking; reads only). Raises
    sqlite3.DatabaseError when it is not a database, DatabaseMissing when there is no file."""
    connection = _connect(path, busy_timeout_ms)
    try:
        return _measure(connection, path)
    finally:
        connection.close()


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _empty_wal(connection: sqlite3.Connection) -> bool:
    """Fold the `-wal` file into the database and cut it to nothing, waiting up to the busy timeout
    for readers still on an older view. False when they stayed: the next checkpoint does it."""
    busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return not busy


def _vacuum(
    connection: sqlite3.Connection, path: Path, busy_timeout_ms: int, stop: threading.Event | None
) -> bool:
    """VACUUM, then `_empty_wal`: whether the `-wal` file was emptied."""
    started = time.monotonic()
    connection.execute("PRAGMA temp_store = FILE")
    # Process-wide, and read by SQLite before TMPDIR or /var/tmp: set only for this VACUUM.
    connection.execute(f"PRAGMA temp_store_directory = {_sql_text(str(path.parent))}")
    connection.set_progress_handler(lambda: int(stop is not None and stop.is_set()), PROGRESS_STEPS)
    try:
        connection.execute("VACUUM")
    except sqlite3.OperationalError as exc:
        failure: Exception = exc
        if stop is not None and stop.is_set():
            failure = CompactStopped(f"stopped before {path} was compacted; it is as it was")
        else:
            failure = write_refused(path, busy_timeout_ms, exc, time.monotonic() - started) or exc
        if not isinstance(failure, DatabaseLocked):  # the -wal file may hold the pages never committed
            _empty_wal(connection)
        raise failure from exc
    finally:
        connection.set_progress_handler(None, 0)
        connection.execute("PRAGMA temp_store_directory = ''")
    return _empty_wal(connection)


def compact(path: Path, busy_timeout_ms: int = 10_000, stop: threading.Event | None = None) -> Compacted:
    """VACUUM the database at `path` and empty its `-wal` file (blocking; run it in a thread).

    It waits up to `busy_timeout_ms` for another writer like any write, then holds the write lock to
    the end: other connections may read meanwhile, their writes wait. Raises NotEnoughSpace before
    anything is changed when the disk is short of `Space.needed`, CompactStopped when `stop` is set
    (looked at every `PROGRESS_STEPS` SQLite instructions), DatabaseLocked or DatabaseWriteFailed as
    Database.write does, DatabaseMissing when there is no file, sqlite3.DatabaseError when it is not a
    database: each leaves the database as it was."""
    connection = _connect(path, busy_timeout_ms)
    try:
        before = _measure(connection, path)
        if not before.enough_room:
            raise NotEnoughSpace(path.parent, before.needed, before.disk_free)
        started = time.monotonic()
        wal_emptied = _vacuum(connection, path, busy_timeout_ms, stop)
    finally:
        connection.close()
    return Compacted(before, on_disk(path), time.monotonic() - started, wal_emptied)
