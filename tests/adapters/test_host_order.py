"""The events a host library handles in tasks of their own, taken in the order they came per chat
(adapters.host.ArrivalOrder)."""

from __future__ import annotations

import asyncio

from adapters.host import ArrivalOrder
from tests.waiting import eventually


async def _in_turn(order: ArrivalOrder, key: str, name: str, done: list[str], hold: asyncio.Event) -> None:
    async with order.turn(key):
        await hold.wait()
        done.append(name)


async def test_a_later_event_of_a_chat_waits_for_the_earlier_one_held_up_and_other_chats_do_not() -> None:
    order = ArrivalOrder()
    done: list[str] = []
    held, free = asyncio.Event(), asyncio.Event()
    free.set()
    first = asyncio.create_task(_in_turn(order, "g1", "g1 first", done, held))
    second = asyncio.create_task(_in_turn(order, "g1", "g1 second", done, free))
    other = asyncio.create_task(_in_turn(order, "g2", "g2", done, free))
    await eventually(lambda: done == ["g2"], "the other chat's event done")  # started after g1's second
    held.set()
    await asyncio.gather(first, second, other)
    assert done == ["g2", "g1 first", "g1 second"]


async def test_an_event_cancelled_while_waiting_for_its_turn_lets_no_later_one_go_first() -> None:
    order = ArrivalOrder()
    done: list[str] = []
    held, free = asyncio.Event(), asyncio.Event()
    free.set()
    first = asyncio.create_task(_in_turn(order, "g1", "first", done, held))
    cancelled = asyncio.create_task(_in_turn(order, "g1", "cancelled", done, free))
    third = asyncio.create_task(_in_turn(order, "g1", "third", done, free))
    probe = asyncio.create_task(_in_turn(order, "g2", "probe", done, free))
    await eventually(lambda: done == ["probe"], "the three g1 events waiting in line")
    cancelled.cancel()
    await asyncio.wait({cancelled})
    other = asyncio.create_task(_in_turn(order, "g2", "after the cancel", done, free))
    await other
    assert done == ["probe", "after the cancel"], "the third event went before the first was done"
    held.set()
    await asyncio.gather(first, third, probe)
    assert done == ["probe", "after the cancel", "first", "third"]
