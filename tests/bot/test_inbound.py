"""The handler `qunyi run` gives each adapter: a failure is logged and the adapter goes on, unless the
adapter tells the sender itself (the playground), to which it is raised."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapters.console import ConsoleAdapter
from adapters.playground import PlaygroundAdapter, PlaygroundConfig
from bot.app import build_app
from bot.config import ConfigStore
from bot.config.settings import Settings
from bot.inbound import inbound_handler
from memory.clock import ManualClock
from memory.storage import DatabaseWriteFailed
from memory.types import MessageDeletion
from tests.conftest import T0

DELETION = MessageDeletion("test", "g1", "m1")


@pytest.mark.parametrize("failure", [RuntimeError("boom"), DatabaseWriteFailed("disk full")])
async def test_a_failure_is_logged_for_the_platforms_and_raised_to_the_playground(
    failure: Exception, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", ManualClock(T0))

    async def failing(*_args: object) -> None:
        raise failure

    monkeypatch.setattr(app.pipeline, "handle_inbound", failing)
    console = ConsoleAdapter("g1", "g1", "alice", "bot", "群忆", lambda: T0)
    playground = PlaygroundAdapter(PlaygroundConfig(), bot_id="bot", bot_name="群忆")
    try:
        await inbound_handler(app, console, asyncio.Event())(DELETION)
        [record] = [r for r in caplog.records if r.name == "bot.inbound"]
        assert "console event" in record.getMessage()
        assert (record.exc_info is None) is isinstance(failure, DatabaseWriteFailed), "a full disk: one line"
        with pytest.raises(type(failure)):
            await inbound_handler(app, playground, asyncio.Event())(DELETION)
    finally:
        await app.close()
