"""The events a host library handles in tasks of their own, taken in the order they came per chat
(adapters.host.ArrivalOrder)."""

from __future__ import annotations

import asyncio

from adapters.host import ArrivalOrder
from tests.waiting import eventually


class Events:
    """Events handled in tasks of their own, each in its turn: `done` names them as they finish; one
    started `held` finishes once `release` is set."""

    def __init__(self) -> None:
        self.order = ArrivalOrder()
        self.done: list[str] = []
        self.release = asyncio.Event()

    def start(self, key: str, name: str, *, held: bool = False) -> asyncio.Task[None]:
        return asyncio.create_task(self._handle(key, name, held))

    async def _handle(self, key: str, name: str, held: bool) -> None:
        async with self.order.turn(key):
            if held:
                await self.release.wait()
            self.done.append(name)


async def test_a_later_event_of_a_chat_waits_for_the_earlier_one_held_up_and_other_chats_do_not() -> None:
    events = Events()
    first = events.start("g1", "g1 first", held=True)
    second = events.start("g1", "g1 second")
    other = events.start("g2", "g2")
    await eventually(lambda: events.done == ["g2"], "the other chat's event done")  # started after g1's
    events.release.set()
    await asyncio.gather(first, second, other)
    assert events.done == ["g2", "g1 first", "g1 second"]


async def test_an_event_cancelled_while_waiting_for_its_turn_lets_no_later_one_go_first() -> None:
    events = Events()
    first = events.start("g1", "first", held=True)
    cancelled = events.start("g1", "cancelled")
    third = events.start("g1", "third")
    await events.start("g2", "probe")  # the three g1 events are waiting in line by now
    cancelled.cancel()
    await asyncio.wait({cancelled})
    await events.start("g2", "after the cancel")
    assert events.done == ["probe", "after the cancel"], "the third event went before the first was done"
    events.release.set()
    await asyncio.gather(first, third)
    assert events.done == ["probe", "after the cancel", "first", "third"]
