"""An adapter handler that holds what it is given, for tests of what stopping does meanwhile."""

from __future__ import annotations

import asyncio

from memory.types import ChatMessage, InboundEvent


class HeldHandler:
    """Holds each event until `release` is set: `started` is set when the first arrives, and `handled`
    lists the events let through, in order."""

    def __init__(self) -> None:
        self.started, self.release = asyncio.Event(), asyncio.Event()
        self.handled: list[InboundEvent] = []

    async def __call__(self, event: InboundEvent) -> None:
        self.started.set()
        await self.release.wait()
        self.handled.append(event)

    def message_ids(self) -> list[str]:
        """The platform ids of the messages let through."""
        return [e.message_id for e in self.handled if isinstance(e, ChatMessage)]
