"""Qunyi inside another bot (bot.plugin.QunyiPlugin), as the tests of its hosts (nonebot2, aiogram,
discord.py) watch it: the events the host fed it, and the messages it stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from bot.plugin import QunyiPlugin
from memory.models import Message
from memory.storage import Database
from memory.types import InboundEvent


def watch_feeds(monkeypatch: pytest.MonkeyPatch) -> list[InboundEvent]:
    """The list every event fed to a QunyiPlugin is added to (before it is recorded), until the test ends."""
    fed: list[InboundEvent] = []
    feed = QunyiPlugin.feed

    async def watched(self: QunyiPlugin, event: InboundEvent) -> None:
        fed.append(event)
        await feed(self, event)

    monkeypatch.setattr(QunyiPlugin, "feed", watched)
    return fed


async def stored(data_dir: Path) -> list[tuple[str, str, bool]]:
    """The messages Qunyi holds in `data_dir`: (platform message id, text, is_bot), in the order recorded."""
    db = await Database.open(data_dir, create=False)
    try:
        async with db.read() as session:
            rows = await session.execute(
                select(Message.platform_message_id, Message.text, Message.is_bot).order_by(Message.id)
            )
    finally:
        await db.close()
    return [(message_id, text, bool(is_bot)) for message_id, text, is_bot in rows]
