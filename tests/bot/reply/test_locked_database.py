"""A live message that meets a database locked by another process waits and is stored, not dropped."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bot.app import App, build_app
from bot.config import ConfigStore
from bot.config.settings import Settings, StorageSettings
from memory.clock import ManualClock
from memory.storage import DatabaseLocked
from memory.types import ChatMessage
from tests.conftest import T0, database_locked, make_message


async def _send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
    return make_message(100, sender="bot", text=text, is_bot=True)


@asynccontextmanager
async def _impatient_app(tmp_path: Path) -> AsyncIterator[App]:
    """The bot's app with a short busy timeout, so a held lock is met quickly."""
    settings = Settings(storage=StorageSettings(busy_timeout_ms=100))
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    try:
        yield app
    finally:
        await app.close()


async def test_a_live_message_waits_out_a_locked_database(tmp_path: Path) -> None:
    async with _impatient_app(tmp_path) as app:
        with database_locked(app.db.path):
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
        outcome = await asyncio.wait_for(live, 10)
        assert outcome is not None and outcome.recorded
        assert [m.text for m in await app.memory.recent(1, 5)] == ["周六去西湖边爬山"]


async def test_a_locked_database_at_shutdown_gives_up_with_an_error(tmp_path: Path) -> None:
    async with _impatient_app(tmp_path) as app:
        with database_locked(app.db.path):
            stopping = asyncio.Event()
            stopping.set()
            outcome = await app.pipeline.handle_live(make_message(1), _send, stopping)
            assert outcome is None
