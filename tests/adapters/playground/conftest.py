"""A started playground adapter on an ephemeral loopback port, and a client for its API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest

from adapters.playground import PlaygroundAdapter, PlaygroundConfig
from memory.clock import ManualClock
from memory.types import InboundEvent
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


def make_adapter(**config: Any) -> PlaygroundAdapter:
    settings = PlaygroundConfig(**({"port": 0, "token": TOKEN} | config))
    return PlaygroundAdapter(settings, bot_id="bot", bot_name="群忆", clock=ManualClock(T0))


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
