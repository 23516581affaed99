"""The live pipeline with the platform's edits and deletions, and the `[messages]` switches."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bot.app import build_app
from bot.config import ConfigStore
from bot.config.settings import MessagesSettings, Settings
from memory.clock import ManualClock
from memory.types import ChatMessage, MessageDeletion
from tests.conftest import T0, make_message


async def _never(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
    raise AssertionError(f"nothing is answered here, yet {text!r} was sent")


async def test_deletions_and_edits_are_followed_and_edits_never_answered(tmp_path: Path) -> None:
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", ManualClock(T0))
    stopping = asyncio.Event()
    try:
        await app.pipeline.handle_inbound(make_message(1, text="周六去西湖"), _never, stopping)
        await app.pipeline.handle_inbound(make_message(2, text="周日去灵隐寺"), _never, stopping)
        edit = make_message(1, text="@群忆 /recall 灵隐寺", to_bot=True, edited=True)
        outcome = await app.pipeline.handle(edit, _never)
        await app.pipeline.handle_inbound(MessageDeletion("test", "g1", "m2"), _never, stopping)
        chat = await app.memory.chat("test", "g1")
        assert chat is not None
        shown = [m.text for m in await app.memory.recent(chat.id, 5)]
    finally:
        await app.close()
    assert outcome.recorded and outcome.reason == "edited"
    assert shown == ["@群忆 /recall 灵隐寺"]


async def test_with_the_switches_off_the_first_version_stays(tmp_path: Path) -> None:
    settings = Settings(messages=MessagesSettings(follow_deletions=False, follow_edits=False))
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    try:
        await app.pipeline.handle(make_message(1, text="周六去西湖"), _never)
        edited = await app.pipeline.handle(make_message(1, text="周日去西湖", edited=True), _never)
        removed = await app.pipeline.handle_deletion(MessageDeletion("test", "g1", "m1"))
        chat = await app.memory.chat("test", "g1")
        assert chat is not None
        shown = [m.text for m in await app.memory.recent(chat.id, 5)]
    finally:
        await app.close()
    assert (edited.recorded, edited.reason, removed) == (False, "edit not followed", False)
    assert shown == ["周六去西湖"]


async def test_with_deletions_not_followed_an_unknown_chat_keeps_no_deletion(tmp_path: Path) -> None:
    settings = Settings(messages=MessagesSettings(follow_deletions=False))
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    try:
        await app.pipeline.handle_inbound(MessageDeletion("test", "g9", "m1"), _never, asyncio.Event())
        assert await app.memory.chat("test", "g9") is None
        recorded = await app.memory.record(make_message(1, chat="g9"))
    finally:
        await app.close()
    assert recorded.created
