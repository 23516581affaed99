"""Closing the database when the closing is cancelled (Ctrl-C while a command is finishing)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from sqlalchemy import text

from memory.storage import Database


async def test_a_cancelled_close_still_closes_every_connection_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by the fifth QA pass: Ctrl-C while `qunyi import` closed the database printed SQLAlchemy's
    'Exception closing connection' with a traceback (the close of a connection cut off midway), and
    left the writer's connections open."""
    db = await Database.open(tmp_path / "data")
    async with db.read() as session:
        await session.execute(text("select 1"))
    async with db.write() as session:
        await session.execute(text("select 1"))
    closing = asyncio.create_task(db.close())
    await asyncio.sleep(0)  # the close is under way: its first connection is being closed
    closing.cancel()
    with caplog.at_level(logging.WARNING), pytest.raises(asyncio.CancelledError):
        await closing
    assert [r.getMessage() for r in caplog.records] == []
    assert db.writer_engine.pool.checkedin() == 0, "the writer's connections were left open"
