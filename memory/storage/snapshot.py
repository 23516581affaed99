"""A consistent copy of the database file, taken while other processes keep writing to it."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

STEP_PAGES = 1024  # pages copied between two looks at the stop event


class SnapshotFailed(RuntimeError):
    """The copy could not be written or did not pass its check (the source is fine)."""


class CopyStopped(Exception):
    """The copy was stopped (its stop event set, e.g. by Ctrl-C) before it was whole."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a snapshot holds: its size on disk and how many chats and messages it remembers."""

    size_bytes: int
    chats: int
    messages: int


def snapshot_database(
    source: Path, target: Path, busy_timeout_ms: int = 10_000, stop: threading.Event | None = None
) -> Snapshot:
    """Copy the Qunyi database at `source` into a new file `target` (blocking; run it in a thread).

    The counts and the copy come from one read transaction, so the copy is consistent even while a bot
    writes (in WAL mode a reader holds no writer up). Raises sqlite3.DatabaseError when `source` is not
    a Qunyi database, SnapshotFailed when the copy cannot be written or fails `PRAGMA quick_check`,
    CopyStopped when `stop` is set before the copy is whole (it is looked at every `STEP_PAGES`)."""

    def progress(_status: int, _remaining: int, _total: int) -> None:
        if stop is not None and stop.is_set():
            raise CopyStopped(f"stopped before {target} was whole")

    reader = sqlite3.connect(source, timeout=busy_timeout_ms / 1000, isolation_level=None)
    try:
        reader.execute("BEGIN")
        chats = int(reader.execute("SELECT count(*) FROM chats").fetchone()[0])
        messages = int(reader.execute("SELECT count(*) FROM messages").fetchone()[0])
        try:
            copy = sqlite3.connect(target)
            try:
                reader.backup(copy, pages=STEP_PAGES, progress=progress)
                verdict = copy.execute("PRAGMA quick_check").fetchone()[0]
            finally:
                copy.close()
        except sqlite3.Error as exc:
            raise SnapshotFailed(f"cannot write {target}: {exc}") from exc
        if verdict != "ok":
            raise SnapshotFailed(f"the copy {target} failed its check: {verdict}")
    finally:
        reader.close()
    return Snapshot(target.stat().st_size, chats, messages)
