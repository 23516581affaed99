"""A started playground adapter on an ephemeral loopback port, and a client for its API; or the whole
bot (its real pipeline and memory on a data directory) behind one; and the headless Chromium of
`tests.browser` for the page's tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.playground import PlaygroundAdapter, PlaygroundConfig
from bot.adapters_factory import build_adapters
from bot.app import App, build_app
from bot.config import ConfigStore
from bot.config.settings import AdaptersSettings, Settings
from bot.inbound import inbound_handler
from memory.clock import ManualClock
from memory.messages import StoredMessage
from memory.types import InboundEvent
from tests.browser import browser as browser
from tests.conftest import T0

TOKEN = "playground-test-token"


@dataclass
class Inbox:
    """A handler that keeps what it is given."""

    events: list[InboundEvent] = field(default_factory=list)

    async def __call__(self, event: InboundEvent) -> None:
        self.events.append(event)


@dataclass
class Playground:
    adapter: PlaygroundAdapter
    session: aiohttp.ClientSession
    base: str

    async def call(
        self, method: str, path: str, *, token: str | None = TOKEN, **kwargs: Any
    ) -> tuple[int, Any]:
        """One request; the status and the body as JSON (or text when it is not JSON)."""
        headers = dict(kwargs.pop("headers", {}))
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        async with self.session.request(method, self.base + path, headers=headers, **kwargs) as response:
            if response.content_type == "application/json":
                return response.status, await response.json()
            return response.status, await response.text()

    async def post(self, **fields: Any) -> tuple[int, Any]:
        return await self.call("POST", "/api/messages", json=fields)

    async def transcript(self, chat: str, after: int = 0) -> list[dict[str, Any]]:
        status, body = await self.call("GET", f"/api/chats/{chat}/messages?after={after}")
        assert status == 200, body
        return list(body["messages"])


async def started(adapter: PlaygroundAdapter, handler: Any) -> Playground:
    await adapter.start(handler)
    assert adapter.url is not None
    base = adapter.url.split("/#", 1)[0]
    return Playground(adapter, aiohttp.ClientSession(), base)


@dataclass
class Bot:
    """The bot built from settings as `qunyi run` builds it, with the playground its only adapter."""

    app: App
    playground: Playground

    async def stored(self, chat_id: str) -> list[StoredMessage]:
        """What memory holds of playground chat `chat_id` (its messages table rows), oldest first."""
        chat = await self.app.memory.chat("playground", chat_id)
        return [] if chat is None else await self.app.memory.recent(chat.id, 1_000)


@asynccontextmanager
async def running_bot(
    data_dir: Path, *, playground: PlaygroundConfig | None = None, **sections: Any
) -> AsyncIterator[Bot]:
    """The bot on `data_dir` with the settings `sections` (as `Settings` takes them), its playground
    started with the handler `qunyi run` gives it (by default `make_config()`: a free loopback port,
    the token TOKEN); closed after."""
    playground_only = AdaptersSettings(enabled=["playground"], playground=playground or make_config())
    settings = Settings(adapters=playground_only, **sections)
    app = await build_app(ConfigStore(settings, None), data_dir, ManualClock(T0))
    [adapter] = build_adapters(app)
    assert isinstance(adapter, PlaygroundAdapter)
    try:
        running = await started(adapter, inbound_handler(app, adapter, asyncio.Event()))
        try:
            yield Bot(app, running)
        finally:
            await running.session.close()
            await adapter.stop()
    finally:
        await app.close()


def make_config(**config: Any) -> PlaygroundConfig:
    """Settings for a playground on a free loopback port with the token TOKEN."""
    return PlaygroundConfig(**({"port": 0, "token": TOKEN} | config))


def make_adapter(seconds: Callable[[], float] = time.monotonic, **config: Any) -> PlaygroundAdapter:
    """A playground adapter on `make_config(**config)`, counting wrong tokens on `seconds`."""
    return PlaygroundAdapter(
        make_config(**config), bot_id="bot", bot_name="群忆", clock=ManualClock(T0), seconds=seconds
    )


@pytest.fixture
def inbox() -> Inbox:
    return Inbox()


@pytest.fixture
async def playground(inbox: Inbox) -> AsyncIterator[Playground]:
    running = await started(make_adapter(), inbox)
    try:
        yield running
    finally:
        await running.session.close()
        await running.adapter.stop()
