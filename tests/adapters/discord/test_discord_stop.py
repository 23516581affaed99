"""Stopping the Discord adapter keeps to the budget it is given, whatever the gateway does."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("discord", reason="the discord extra is not installed")

from adapters.discord import DiscordAdapter
from adapters.discord.config import DiscordConfig
from tests.adapters.held import SlowToCancel
from tests.waiting import WAIT


class UnansweredClose:
    """Stands in for `discord.Client` (no gateway runs here): its close waits for a closing handshake
    that never comes, as with a gateway that stopped answering; `closing` records that call."""

    def __init__(self) -> None:
        self.closing = SlowToCancel()

    async def close(self) -> None:
        await self.closing(None)  # type: ignore[arg-type]


async def test_a_close_the_gateway_does_not_answer_is_cut_at_the_budget() -> None:
    adapter = DiscordAdapter(DiscordConfig(token="x"))
    client = UnansweredClose()
    connection = asyncio.ensure_future(asyncio.get_running_loop().create_future())
    adapter._client, adapter._task = client, connection  # type: ignore[assignment]
    stopping = asyncio.ensure_future(adapter.stop(within=0))  # the budget is used up at once
    done, _ = await asyncio.wait({stopping}, timeout=WAIT)  # a guard against a stop that hangs
    assert stopping in done, "the stop did not wait for the close to give up"
    assert client.closing.cancelled.is_set(), "the close was cancelled"
    assert connection.cancelled(), "the connection was dropped"
    client.closing.release.set()
