"""The implementation's side of a loopback OneBot v11 connection, for the adapter tests: its messages,
a peer that sends events and answers actions, the inbox the adapter delivers to.

A module of its own, not conftest: test modules import these, and `from conftest import …` found
whichever folder's conftest pytest had loaded first under that name (playground's, in a run that
collected that folder too)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from memory.types import ChatMessage, InboundEvent
from tests.waiting import WAIT

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


ConnectPeer = Callable[..., Awaitable[Peer]]
