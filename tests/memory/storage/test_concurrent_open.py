"""Two Database objects (or processes) on one file: the one that connects second does not fail."""

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from memory.models import Chat, Message
from memory.storage import Database, DatabaseLocked, migrate
from memory.storage.database import require_database_file, write_refused
from tests.conftest import database_locked


async def test_a_first_connection_made_while_another_process_writes_does_not_fail(tmp_path: Path) -> None:
    # The file was once made WAL by the first pooled connection of each Database; that switch needs the
    # file to itself and fails at once, busy timeout or not, while another connection writes.
    first = await Database.open(tmp_path / "d")
    second = await Database.open(tmp_path / "d")
    try:
        with database_locked(first.path):
            async with second.read() as session:
                assert await session.scalar(select(func.count()).select_from(Message)) == 0
    finally:
        await first.close()
        await second.close()


async def test_two_processes_creating_a_new_database_together_both_open_it(tmp_path: Path) -> None:
    # Both upgrades read "no schema" and then deadlocked on taking the write lock: one failed with
    # "database is locked" every time.
    for attempt in range(3):
        folder = tmp_path / f"new{attempt}"
        opened = await asyncio.gather(Database.open(folder), Database.open(folder))
        try:
            async with opened[1].write() as session:
                session.add(Chat(platform="qq", platform_chat_id="g1", kind="group", created_at=0.0))
            async with opened[0].read() as session:
                assert await session.scalar(select(func.count()).select_from(Chat)) == 1
        finally:
            for database in opened:
                await database.close()


async def test_a_lock_refused_at_once_is_not_reported_as_waited_out(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "d", busy_timeout_ms=200)
    try:
        with database_locked(db.path), pytest.raises(DatabaseLocked, match="stayed locked for over 200 ms"):
            async with db.write() as session:
                session.add(Chat(platform="qq", platform_chat_id="g1", kind="group", created_at=0.0))
        # SQLite answers some conflicts without the busy handler; saying it waited 200 ms would mislead.
        at_once = write_refused(db.path, 200, sqlite3.OperationalError("database is locked"), 0.005)
        assert isinstance(at_once, DatabaseLocked) and "refused after 5 ms" in str(at_once)
        assert "stayed locked" not in str(at_once)
    finally:
        await db.close()


async def test_the_switch_to_wal_waits_for_another_process_instead_of_failing(tmp_path: Path) -> None:
    # A second process still in its schema check holds a lock when the first switches the new file to
    # WAL; SQLite refuses that switch at once, so it is retried until the busy timeout.
    folder = tmp_path / "d"
    folder.mkdir()
    migrate.upgrade(folder / "qunyi.db")
    locked, release = threading.Event(), threading.Event()

    def other_process() -> None:
        with database_locked(folder / "qunyi.db"):
            locked.set()
            release.wait(60)

    holder = threading.Thread(target=other_process)
    holder.start()
    assert locked.wait(60)
    threading.Timer(0.3, release.set).start()
    try:
        db = await Database.open(folder, busy_timeout_ms=60_000)  # however late the release comes
    finally:
        release.set()
        holder.join()
    try:
        async with db.read() as session:
            mode = (await session.execute(text("PRAGMA journal_mode"))).scalar_one()
        assert mode == "wal"
    finally:
        await db.close()


def test_a_database_file_made_by_another_process_between_two_looks_is_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two processes making a new database: the other one made the file right after this one first
    # looked, and "it is not a file (a folder is in its place?)" failed the open.
    path = tmp_path / "qunyi.db"
    looks: list[str] = []
    real_exists, real_is_file = Path.exists, Path.is_file

    def first_look_then_made(name: str, real: Callable[[Path], bool]) -> Callable[[Path], bool]:
        def look(self: Path) -> bool:
            if self != path:
                return real(self)
            looks.append(name)
            if len(looks) == 1:
                path.touch()  # the other process, just after this look
                return False
            return real(self)

        return look

    monkeypatch.setattr(Path, "exists", first_look_then_made("exists", real_exists))
    monkeypatch.setattr(Path, "is_file", first_look_then_made("is_file", real_is_file))
    require_database_file(path, may_be_missing=True)
    assert looks, "the path was looked at"
