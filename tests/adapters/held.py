"""An adapter handler that holds what it is given, for tests of what stopping does meanwhile."""

from __future__ import annotations

import asyncio

from memory.types import ChatMessage, InboundEvent
from tests.waiting import WAIT


async def stop_waits(stopping: asyncio.Future[None], draining: asyncio.Event) -> None:
    """Return once the stop under way (`stopping`) waits for the events being handled (the adapter's
    `InFlight.draining` is set); fail if it ended without waiting for them."""
    waiting = asyncio.ensure_future(draining.wait())
    try:
        await asyncio.wait({stopping, waiting}, timeout=WAIT, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    assert draining.is_set() and not stopping.done(), "the stop did not wait for the events being handled"


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


class SlowToCancel:
    """A handler that never finishes on its own and, cancelled, takes until `release` is set to give
    up (a clean-up that is slow): `started` is set when the first event arrives, `cancelled` once it
    is cancelled."""

    def __init__(self) -> None:
        self.started, self.cancelled, self.release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def __call__(self, _event: InboundEvent) -> None:
        self.started.set()
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            self.cancelled.set()
            await self.release.wait()
            raise
