"""The adapter's frame reads on a clock the test moves, for the stale watchdog without real seconds."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from adapters.onebot_v11.adapter import WebSocket


class ManualReads:
    """A `FrameReader` whose clock stands still until `advance` moves it: a read times out once the
    clock has moved its limit past where it stood when the read began, and only then."""

    def __init__(self) -> None:
        self.now = 0.0
        self.frames: list[aiohttp.WSMessage] = []  # what the reads returned, in order
        self._reading: dict[asyncio.Timeout, float] = {}  # the reads under way -> when each times out

    async def __call__(self, ws: WebSocket, within: float) -> aiohttp.WSMessage:
        async with asyncio.timeout(None) as timeout:
            self._reading[timeout] = self.now + within
            try:
                frame = await ws.receive()
            finally:
                del self._reading[timeout]
        self.frames.append(frame)
        return frame

    def advance(self, seconds: float) -> int:
        """Move the clock on by `seconds`; how many reads that times out (the adapter learns so at its
        next turn)."""
        self.now += seconds
        due = [timeout for timeout, at in self._reading.items() if at <= self.now]
        for timeout in due:
            timeout.reschedule(asyncio.get_running_loop().time())
        return len(due)

    def read(self, event: dict[str, Any]) -> bool:
        """Whether a read returned a frame holding `event`'s keys and values (the adapter has then
        handled it and begun the read after it)."""
        texts = [json.loads(frame.data) for frame in self.frames if frame.type is aiohttp.WSMsgType.TEXT]
        return any(event.items() <= text.items() for text in texts if isinstance(text, dict))
