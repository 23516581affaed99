"""Fixtures of the adapters' tests: the loopback fake Telegram Bot API of tests.adapters.telegram.bot_api
(`api`), for the Telegram adapter's tests and those of Qunyi inside an aiogram bot."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.adapters.telegram.bot_api import FakeBotAPI, serve_bot_api


@pytest.fixture
async def api() -> AsyncIterator[tuple[FakeBotAPI, str]]:
    """The fake Bot API serving the fixture's updates, and its base address (`api_base`)."""
    async with serve_bot_api() as served:
        yield served
