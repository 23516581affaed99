"""A live message that meets a database locked by another process waits and is stored, not dropped."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

from bot.app import build_app
from bot.config import ConfigStore
from bot.config.settings import Settings, StorageSettings
from memory.clock import ManualClock
from memory.storage import DatabaseLocked
from memory.types import ChatMessage
from tests.conftest import T0, make_message


async def _send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
    return make_message(100, sender="bot", text=text, is_bot=True)


def _hold_lock(path: Path, held: threading.Event, release: threading.Event) -> None:
    """Another process's writer: BEGIN IMMEDIATE until told to let go."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
        held.set()
        release.wait(10)
        connection.execute("ROLLBACK")
    finally:
        connection.close()


async def test_a_live_message_waits_out_a_locked_database(tmp_path: Path) -> None:
    settings = Settings(storage=StorageSettings(busy_timeout_ms=100))
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    held, release = threading.Event(), threading.Event()
    locker = threading.Thread(target=_hold_lock, args=(app.db.path, held, release))
    locker.start()
    try:
        assert held.wait(5)
        try:
            await app.pipeline.handle(make_message(1, text="周六去西湖边爬山"), _send)
        except DatabaseLocked:
            pass  # what a single attempt meets
        else:
            raise AssertionError("the database should be locked")
        stopping = asyncio.Event()
        live = asyncio.create_task(
            app.pipeline.handle_live(make_message(1, text="周六去西湖边爬山"), _send, stopping)
        )
        await asyncio.sleep(0.5)
        assert not live.done(), "the message waits for the lock"
        release.set()
        outcome = await asyncio.wait_for(live, 10)
        assert outcome is not None and outcome.recorded
        assert [m.text for m in await app.memory.recent(1, 5)] == ["周六去西湖边爬山"]
    finally:
        release.set()
        await asyncio.to_thread(locker.join)
        await app.close()


async def test_a_locked_database_at_shutdown_gives_up_with_an_error(tmp_path: Path) -> None:
    settings = Settings(storage=StorageSettings(busy_timeout_ms=100))
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    held, release = threading.Event(), threading.Event()
    locker = threading.Thread(target=_hold_lock, args=(app.db.path, held, release))
    locker.start()
    try:
        assert held.wait(5)
        stopping = asyncio.Event()
        stopping.set()
        outcome = await app.pipeline.handle_live(make_message(1), _send, stopping)
        assert outcome is None
    finally:
        release.set()
        await asyncio.to_thread(locker.join)
        await app.close()
