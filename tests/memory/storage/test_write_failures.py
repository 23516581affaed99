"""A write the machine refuses (a full disk) is one clear error, and nothing of it is kept."""

from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select, text

from bot.cli.main import cli
from memory.clock import ManualClock
from memory.models import Message
from memory.service import MemoryService
from memory.storage import Database, DatabaseWriteFailed
from tests.conftest import T0, make_message


async def fill_up(db: Database) -> None:
    """The writer's connection may not grow the file any more: SQLite answers 'database or disk is full'."""
    async with db.write() as session:
        await session.execute(text("PRAGMA max_page_count = 1"))


async def test_a_full_disk_is_a_clear_error_and_keeps_nothing_half_written(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "d")
    memory = MemoryService(db, ManualClock(T0))
    try:
        await memory.record(make_message(1, text="周六去爬山吗"))
        await fill_up(db)
        with pytest.raises(DatabaseWriteFailed, match="could not be written: database or disk is full"):
            await memory.record_many([make_message(n, text="好啊" * 20_000) for n in range(2, 40)])
        async with db.read() as session:
            assert await session.scalar(select(func.count()).select_from(Message)) == 1
    finally:
        await db.close()


def test_a_cli_command_that_meets_a_full_disk_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"chat": "g1", "message_id": "m1", "sender_id": "u1", "sender_name": "a", '
        '"time": "2026-03-01T20:15:00+08:00", "text": "' + "好啊" * 20_000 + '"}\n',
        encoding="utf-8",
    )
    opened = Database.open

    async def full(*args: object, **kwargs: object) -> Database:
        db = await opened(*args, **kwargs)  # type: ignore[arg-type]
        await fill_up(db)
        return db

    monkeypatch.setattr(Database, "open", full)
    args = ["import", "replay", str(log), "--no-progress", "--data-dir", str(tmp_path / "d")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "could not be written: database or disk is full" in result.output
    assert "free space" in result.output
