"""A loopback OneBot v11 implementation for driving the adapter end to end."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.onebot_v11 import OneBotAdapter, OneBotConfig
from memory.types import ChatMessage, InboundEvent
from tests.waiting import WAIT, eventually

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "onebot_v11"
TOKEN = "s3cret"
SELF_ID = "10001"

Responder = Callable[[dict[str, Any]], dict[str, Any] | None]


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def ok(data: Any) -> dict[str, Any]:
    return {"status": "ok", "retcode": 0, "data": data}


class Peer:
    """Speaks the implementation's side: sends events, records actions, answers them from `responders`."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.actions: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.responders: dict[str, Responder] = {
            "get_login_info": lambda _p: ok({"user_id": int(SELF_ID), "nickname": "群忆"}),
        }
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type is not aiohttp.WSMsgType.TEXT:
                break
            request = json.loads(msg.data)
            await self.actions.put(request)
            responder = self.responders.get(request["action"])
            answer = responder(request["params"]) if responder else None
            if answer is not None:
                await self.ws.send_json({**answer, "echo": request["echo"]})

    async def send(self, event: dict[str, Any]) -> None:
        await self.ws.send_json(event)

    async def next_action(self, name: str) -> dict[str, Any]:
        """The next recorded action called `name` (skipping others, such as get_login_info)."""
        while True:
            request = await asyncio.wait_for(self.actions.get(), WAIT)
            if request["action"] == name:
                return request

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


class Inbox:
    """The handler the adapter delivers to, as a queue the test awaits."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[InboundEvent] = asyncio.Queue()

    async def __call__(self, message: InboundEvent) -> None:
        await self.queue.put(message)

    async def get(self) -> ChatMessage:
        event = await self.event()
        assert isinstance(event, ChatMessage), event
        return event

    async def event(self) -> InboundEvent:
        return await asyncio.wait_for(self.queue.get(), WAIT)


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
async def reverse() -> AsyncIterator[tuple[OneBotAdapter, Inbox, str]]:
    """A started reverse-mode adapter on an ephemeral loopback port, its inbox and its ws url."""
    config = OneBotConfig(
        port=0, access_token=TOKEN, stale_timeout=WAIT, action_timeout=WAIT, reply_lookup_timeout=WAIT
    )
    adapter = OneBotAdapter(config)
    inbox = Inbox()
    await adapter.start(inbox)
    url = f"ws://127.0.0.1:{adapter.bound_port}{config.path}"
    yield adapter, inbox, url
    await adapter.stop()


ConnectPeer = Callable[..., Awaitable[Peer]]


@pytest.fixture
async def connect_peer(
    session: aiohttp.ClientSession, reverse: tuple[OneBotAdapter, Inbox, str]
) -> AsyncIterator[ConnectPeer]:
    """Dial the reverse server as NapCat would (token and self id headers) and wait until accepted."""
    peers: list[Peer] = []

    async def connect(self_id: str = SELF_ID) -> Peer:
        adapter, _, url = reverse
        ws = await session.ws_connect(
            url,
            headers={"Authorization": f"Bearer {TOKEN}", "X-Self-ID": self_id, "X-Client-Role": "Universal"},
        )
        peer = Peer(ws)
        peers.append(peer)
        await peer.send(fixture("lifecycle_connect.json") | {"self_id": int(self_id)})
        await eventually(lambda: self_id in adapter.self_ids, f"connection {self_id} accepted", WAIT)
        return peer

    yield connect
    for peer in peers:
        await peer.close()
