"""VACUUM through `memory.storage.compact` on real database files: what it gives back, where its
temporary copy goes, a stop midway, and what a bot's writes and reads meet while it runs."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import func, select

from memory.models import Message
from memory.service import MemoryService
from memory.storage import Database, DatabaseLocked
from memory.storage.compact import CompactStopped, compact, measure, on_disk
from tests.conftest import make_message
from tests.memory.storage.filled import OLD, fill, pages, rows


async def _pruned(data: Path, old_vectors: int = 3000, kept_vectors: int = 0) -> Path:
    await fill(data, old_vectors, kept_vectors)
    with closing(sqlite3.connect(data / "qunyi.db")) as connection, connection:
        connection.execute("DELETE FROM embeddings WHERE model = ?", (OLD,))
    return data / "qunyi.db"


class StopAt(threading.Event):
    """A stop event that reads as set from its `calls`-th look on: a Ctrl-C arriving midway through."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.calls = calls
        self.looks = 0

    def is_set(self) -> bool:
        self.looks += 1
        return self.looks >= self.calls or super().is_set()


class HeldAt(threading.Event):
    """A stop event that holds the VACUUM at its `calls`-th look until `go` is set: a long VACUUM, made
    as long as the test needs."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.calls = calls
        self.looks = 0
        self.holding = threading.Event()
        self.go = threading.Event()

    def is_set(self) -> bool:
        self.looks += 1
        if self.looks == self.calls:
            self.holding.set()
            self.go.wait(60)
        return False


async def test_compact_gives_back_the_free_pages_and_keeps_every_row(tmp_path: Path) -> None:
    database = await _pruned(tmp_path / "群忆 it's data")  # the folder is named to SQLite in quotes
    before = measure(database)
    kept = rows(database)
    assert before.reclaimable == pages(database)[1] * 4096 > 4_000_000
    done = compact(database)
    assert replace(done.before, disk_free=0) == replace(before, disk_free=0)  # the disk is shared
    assert done.bytes_after == on_disk(database) == database.stat().st_size
    assert done.bytes_after <= before.file_bytes - before.reclaimable and done.wal_emptied
    assert pages(database)[1] == 0
    assert rows(database) == kept
    with closing(sqlite3.connect(database)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # The process-wide temporary folder is SQLite's default again.
        assert connection.execute("PRAGMA temp_store_directory").fetchall() == []


async def test_a_stopped_vacuum_leaves_the_database_as_it_was_and_no_wal_behind(tmp_path: Path) -> None:
    database = await _pruned(tmp_path / "d", kept_vectors=6000)
    kept, counts = rows(database), pages(database)
    stop = StopAt(calls=20)
    with pytest.raises(CompactStopped, match="it is as it was"):
        compact(database, stop=stop)
    assert pages(database) == counts
    assert rows(database) == kept
    wal = database.with_name("qunyi.db-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert [p.name for p in database.parent.iterdir()] == ["qunyi.db"], "no temporary copy is left"


async def test_a_bots_writes_wait_on_the_vacuum_and_fail_past_their_busy_timeout_while_reads_go_on(
    tmp_path: Path,
) -> None:
    """Why `qunyi compact` refuses a running bot: the VACUUM holds the write lock from start to end, so a
    bot's write waits `busy_timeout_ms` and fails (a VACUUM of a large file takes longer than that);
    its reads go on (WAL). Once the VACUUM is done, the write goes through and the rows are all there."""
    database = await _pruned(tmp_path / "d", kept_vectors=6000)
    held = HeldAt(calls=20)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            compact(database, stop=held)
        except BaseException as exc:
            failures.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    bot_db = await Database.open(tmp_path / "d", busy_timeout_ms=200)
    try:
        assert held.holding.wait(60), f"the VACUUM never got going: {failures}"
        memory = MemoryService(bot_db)
        with pytest.raises(DatabaseLocked, match="stayed locked for over 200 ms"):
            await memory.record(make_message(500, chat="g0", text="compact 的时候说的话"))
        async with bot_db.read() as session:
            assert await session.scalar(select(func.count()).select_from(Message)) == 120
        assert pages(database)[1] > 0, "the VACUUM is still under way"
        held.go.set()
        worker.join(60)
        assert not worker.is_alive() and failures == []
        recorded = await memory.record(make_message(500, chat="g0", text="compact 的时候说的话"))
        assert recorded.created
        async with bot_db.read() as session:
            assert await session.scalar(select(func.count()).select_from(Message)) == 121
    finally:
        held.go.set()
        worker.join(60)
        await bot_db.close()
    assert pages(database)[1] == 0


async def test_the_wal_file_is_emptied_while_another_connection_keeps_the_database_open(
    tmp_path: Path,
) -> None:
    """Closing the last connection removes the -wal file anyway; with another one open (the admin console,
    a backup) only the checkpoint after the VACUUM keeps it from holding the packed database again."""
    database = await _pruned(tmp_path / "d", kept_vectors=6000)
    with closing(sqlite3.connect(database)) as other:
        assert other.execute("SELECT count(*) FROM messages").fetchone()[0] == 120
        done = compact(database)
        assert database.with_name("qunyi.db-wal").stat().st_size == 0
        assert done.bytes_after == database.stat().st_size < done.before.file_bytes - done.before.reclaimable
        assert other.execute("SELECT count(*) FROM messages").fetchone()[0] == 120


async def test_a_reader_on_an_older_view_leaves_the_packed_pages_in_the_wal_file(tmp_path: Path) -> None:
    """The checkpoint waits the busy timeout for a reader (a backup) still on the view before the VACUUM,
    then gives up: the result says the -wal file was not emptied, and the pages wait there."""
    database = await _pruned(tmp_path / "d", kept_vectors=6000)
    kept = rows(database)
    with closing(sqlite3.connect(database, isolation_level=None)) as reader:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM messages").fetchone()[0] == 120
        done = compact(database, busy_timeout_ms=200)
        assert not done.wal_emptied
        assert done.bytes_after == on_disk(database) > database.stat().st_size
        reader.execute("COMMIT")
    assert rows(database) == kept
    assert pages(database)[1] == 0
