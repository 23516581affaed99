"""The offline Discord guild of tests.adapters.discord.world, as the `world` fixture."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.adapters.discord.world import World


@pytest.fixture
async def world() -> AsyncIterator[World]:
    """The guild, on a state of its own whose HTTP client never connects."""
    import discord  # here, not above: without the discord extra the tests that need it are skipped
    from discord.http import HTTPClient
    from discord.state import ConnectionState

    from tests.adapters.discord.world import World

    http = HTTPClient(asyncio.get_running_loop())
    state = ConnectionState(
        dispatch=lambda *a, **k: None,
        handlers={},
        hooks={},
        http=http,
        intents=discord.Intents.default(),
        chunk_guilds_at_startup=False,
    )
    yield World(state)
    await http.close()
