"""A live message that meets a database locked by another process waits and is stored, not dropped."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.app import App, build_app
from bot.config import ConfigStore
from bot.config.settings import Settings, StorageSettings
from bot.llm import LLMSettings
from memory.clock import ManualClock
from memory.storage import DatabaseLocked
from memory.types import ChatMessage
from tests.conftest import T0, database_locked, make_message
from tests.fakes.openai_server import Answer, FakeOpenAI
from tests.waiting import WAIT, eventually


async def _send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
    return make_message(100, sender="bot", text=text, is_bot=True)


@asynccontextmanager
async def _impatient_app(tmp_path: Path) -> AsyncIterator[App]:
    """The bot's app with a short busy timeout, so a held lock is met quickly."""
    settings = Settings(storage=StorageSettings(busy_timeout_ms=100))
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    try:
        yield app
    finally:
        await app.close()


async def test_a_live_message_waits_out_a_locked_database(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "bot.reply.pipeline")
    async with _impatient_app(tmp_path) as app:
        with database_locked(app.db.path):
            try:
                await app.pipeline.handle(make_message(1, text="周六去西湖边爬山"), _send)
            except DatabaseLocked:
                pass  # what a single attempt meets
            else:
                raise AssertionError("the database should be locked")
            stopping = asyncio.Event()
            live = asyncio.create_task(
                app.pipeline.handle_live(make_message(1, text="周六去西湖边爬山"), _send, stopping)
            )
            # Two attempts met the lock (each says it will be tried again): it waits, not gives up.
            await eventually(
                lambda: live.done() or caplog.text.count("will be tried again") >= 2, "two locked attempts"
            )
            assert not live.done(), "the message waits for the lock"
        outcome = await asyncio.wait_for(live, WAIT)
        assert outcome is not None and outcome.recorded
        assert [m.text for m in await app.memory.recent(1, 5)] == ["周六去西湖边爬山"]


async def test_a_locked_database_at_shutdown_gives_up_with_an_error(tmp_path: Path) -> None:
    async with _impatient_app(tmp_path) as app:
        with database_locked(app.db.path):
            stopping = asyncio.Event()
            stopping.set()
            outcome = await app.pipeline.handle_live(make_message(1), _send, stopping)
            assert outcome is None


@asynccontextmanager
async def _app_with_model(tmp_path: Path, fake_llm: FakeOpenAI) -> AsyncIterator[App]:
    """The bot's app with a short busy timeout and the fake model answering."""
    llm = LLMSettings(enabled=True, base_url=fake_llm.base_url, model="fake-chat", max_retries=0)
    settings = Settings(storage=StorageSettings(busy_timeout_ms=100), llm=llm)
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    try:
        yield app
    finally:
        await app.close()


def _lock_for_a_while(path: Path) -> None:
    """Another process starts writing now and is done half a second later."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    asyncio.get_running_loop().call_later(0.5, lambda: (holder.execute("ROLLBACK"), holder.close()))


async def test_the_bots_answer_is_recorded_when_the_database_locks_as_it_goes_out(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """The answer was sent, then recording it met the lock: the whole message was tried again, found
    already stored ("duplicate"), and the bot's own message was never recorded (so a reply to it
    did not count as replying to the bot)."""
    sent: list[str] = []
    async with _app_with_model(tmp_path, fake_llm) as app:

        async def send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
            sent.append(text)
            _lock_for_a_while(app.db.path)
            return make_message(100, sender="bot", text=text, is_bot=True)

        fake_llm.script(Answer("周五晚上"))
        question = make_message(1, text="@群忆 开炉是哪天", to_bot=True)
        outcome = await app.pipeline.handle_live(question, send, asyncio.Event())
        stored = [(m.text, m.is_bot) for m in await app.memory.recent(1, 5)]
    assert outcome is not None and outcome.reply == "周五晚上"
    assert sent == ["周五晚上"], "one answer, sent once"
    assert stored == [("@群忆 开炉是哪天", False), ("周五晚上", True)]


async def test_an_answer_whose_token_usage_met_the_lock_goes_out_once_and_the_usage_is_kept(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """Recording the model's token usage met the lock: the reply used to be dropped silently, then made
    again (a second request, paid twice); the ledger now keeps the row until the database takes it."""
    sent: list[str] = []
    async with _app_with_model(tmp_path, fake_llm) as app:

        async def send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
            sent.append(text)
            return make_message(100, sender="bot", text=text, is_bot=True)

        def locking_answer(_body: dict[str, Any]) -> Answer:
            if len(fake_llm.chat_requests) == 1:
                _lock_for_a_while(app.db.path)
            return Answer("周五晚上", usage=(50, 4))

        fake_llm.default = locking_answer
        question = make_message(1, text="@群忆 开炉是哪天", to_bot=True)
        outcome = await app.pipeline.handle_live(question, send, asyncio.Event())
        stored = [(m.text, m.is_bot) for m in await app.memory.recent(1, 5)]
        database = app.db.path
    assert outcome is not None and outcome.reply == "周五晚上"
    assert len(fake_llm.chat_requests) == 1 and sent == ["周五晚上"]
    assert stored == [("@群忆 开炉是哪天", False), ("周五晚上", True)]
    with sqlite3.connect(database) as db:
        usage = list(db.execute("SELECT task, prompt_tokens, completion_tokens, ok FROM llm_usage"))
    assert usage == [("reply", 50, 4, 1)]
