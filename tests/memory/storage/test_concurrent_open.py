"""Two Database objects (or processes) on one file: the one that connects second does not fail."""

from pathlib import Path

from sqlalchemy import func, select

from memory.models import Message
from memory.storage import Database
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
