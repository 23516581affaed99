"""A console over a real App (SQLite in a temporary folder) served on an ephemeral loopback port."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.app import App, build_app
from bot.config import ConfigStore
from bot.web.app import build_web_app
from memory.clock import ManualClock
from memory.models import ChatHistory
from tests.browser import browser as browser
from tests.conftest import T0

TOKEN = "test-token-Zx9"
CSRF = re.compile(r'name="_csrf" value="([0-9a-f]+)"')
CONFIG = """
[llm]
api_key = "sk-very-secret-key"
[context]
total_tokens = 3000
"""


@dataclass
class Console:
    app: App
    client: TestClient
    config_path: Path

    async def login(self) -> str:
        """Log in with ?token= (sets the cookie); returns the CSRF token of the pages."""
        response = await self.client.get(f"/?token={TOKEN}")
        assert response.status == 200
        found = CSRF.search(await (await self.client.get("/config")).text())
        assert found is not None
        return found.group(1)

    async def chat_id(self, key: str = "test:g1") -> int:
        chat = await self.app.memory.find_chat(key)
        assert chat is not None
        return chat.id


@pytest.fixture
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    async with serving(tmp_path, CONFIG) as served:
        yield served


@asynccontextmanager
async def serving(
    tmp_path: Path, config_text: str, seconds: Callable[[], float] = time.monotonic
) -> AsyncIterator[Console]:
    """The console over an App configured by `config_text`, logged out; `seconds` is the clock wrong
    tokens are counted on."""
    config_path = tmp_path / "config.toml"
    config_path.write_text(config_text, encoding="utf-8")
    app = await build_app(
        ConfigStore.load(config_path), tmp_path / "data", ManualClock(T0), watch_config=False
    )
    client = TestClient(TestServer(build_web_app(app, TOKEN, clock=seconds), host="127.0.0.1"))
    await client.start_server()
    try:
        yield Console(app, client, config_path)
    finally:
        await client.close()
        await app.close()


def history_row(chat_id: int, theme: str, count: int, age: timedelta = timedelta(hours=2)) -> ChatHistory:
    """A packed topic of `chat_id` that ended `age` before T0, about 火锅."""
    end = (T0 - age).timestamp()
    return ChatHistory(
        chat_id=chat_id, theme=theme, keywords=["火锅"], summary="周末吃火锅", key_points=[],
        original_text="t", participants=[], start_time=end - 600, end_time=end,
        source_message_ids=[1, 2], count=count, forget_times=0, provenance="offline", created_at=end,
    )  # fmt: skip
