"""A chat the platform moved (a Telegram group upgraded to a supergroup), followed by the running bot
while another process holds the database."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.app import App, build_app
from bot.chat_moves import follow_chat_move
from bot.commands import answers
from bot.config import ConfigStore
from bot.config.settings import Settings, StorageSettings
from bot.reply.pipeline import Pending
from memory.chat_merge import merge_chats
from memory.clock import ManualClock
from memory.embeddings.store import save_vectors
from memory.jargon import dictionary
from memory.types import ChatMessage, ChatMoved
from tests.bot.reply.test_reply_answers import llm_settings
from tests.conftest import T0, database_locked, make_message
from tests.fakes.openai_server import Answer, FakeOpenAI, Hold
from tests.memory.jargon.jargon_helpers import NOW, mine
from tests.waiting import WAIT

MOVED = ChatMoved("test", "g1", "g2")


@asynccontextmanager
async def _impatient_app(tmp_path: Path) -> AsyncIterator[App]:
    """The bot's app with a short busy timeout and the group's memory under its old id."""
    settings = Settings(storage=StorageSettings(busy_timeout_ms=100))
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    try:
        await app.memory.record_many([make_message(1, text="周六爬山"), make_message(2, text="好")])
        yield app
    finally:
        await app.close()


class _Retried(logging.Handler):
    """Sets `seen` when the bot says it will try the move again."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "will be tried again" in record.getMessage():
            self.seen.set()


async def test_a_chat_move_waits_out_a_locked_database(tmp_path: Path) -> None:
    """The platform tells of the move once: a database locked at that moment used to end the move
    with a traceback, leaving the memory under the old id for good."""
    retried = _Retried()
    logging.getLogger("bot.reply.pipeline").addHandler(retried)
    try:
        async with _impatient_app(tmp_path) as app:
            with database_locked(app.db.path):
                move = asyncio.create_task(follow_chat_move(app, MOVED, asyncio.Event()))
                await asyncio.wait_for(retried.seen.wait(), 30)
                assert not move.done(), "the move waits for the lock"
            report = await asyncio.wait_for(move, 30)
            assert report is not None and report.messages == 2
            assert await app.memory.chat("test", "g1") is None
            moved = await app.memory.chat("test", "g2")
            assert moved is not None
            assert [m.text for m in await app.memory.recent(moved.id, 5)] == ["周六爬山", "好"]
    finally:
        logging.getLogger("bot.reply.pipeline").removeHandler(retried)


async def test_a_chat_move_met_by_a_locked_database_at_shutdown_says_how_to_make_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with _impatient_app(tmp_path) as app:
        stopping = asyncio.Event()
        stopping.set()
        with database_locked(app.db.path), caplog.at_level(logging.ERROR):
            assert await follow_chat_move(app, MOVED, stopping) is None
        assert "to move it: qunyi chats merge -- test:g1 test:g2" in caplog.text
        assert await app.memory.chat("test", "g1") is not None, "nothing half-done"
        assert await app.memory.chat("test", "g2") is None


async def test_a_late_message_under_the_old_id_joins_the_merged_memory_and_is_answered_where_said(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """A message of the old group delivered after the move used to make the old chat again (the
    group's memory split in two); it now joins the new chat's memory, and the answer still goes to the
    chat it was said in, as a reply to it; a reply to that answer counts as one to the bot."""
    app = await build_app(
        ConfigStore(llm_settings(fake_llm.base_url), None), tmp_path / "data", ManualClock(T0)
    )
    sent: list[tuple[str, str | None]] = []

    async def send(chat_id: str, text: str, **kwargs: Any) -> ChatMessage:
        sent.append((chat_id, kwargs.get("reply_to")))
        return make_message(900 + len(sent), chat=chat_id, sender="bot", text=text, is_bot=True)

    fake_llm.script(Answer("香山"), Answer("八点"))
    try:
        await app.memory.record_many([make_message(1, text="周六爬山"), make_message(2, text="好")])
        assert await follow_chat_move(app, MOVED) is not None
        asked = await app.pipeline.handle(make_message(3, text="@群忆 去哪座山", to_bot=True), send)
        again = await app.pipeline.handle(make_message(4, text="几点出发", reply_to="m901"), send)
        assert await app.memory.chat("test", "g1") is None, "the old chat is not made again"
        moved = await app.memory.chat("test", "g2")
        assert moved is not None
        shown = [m.text for m in await app.memory.recent(moved.id, 10)]
    finally:
        await app.close()
    assert (asked.reply, again.reply, again.reason) == ("香山", "八点", "replied to")
    assert sent == [("g1", "m3"), ("g1", "m4")]
    assert shown == ["周六爬山", "好", "@群忆 去哪座山", "香山", "几点出发", "八点"]


async def test_a_chat_move_the_bot_follows_drops_both_chats_cached_memory_at_once(tmp_path: Path) -> None:
    """What the bot keeps in memory per chat (vectors, names, vocabularies) stayed under the old
    group's id after the move until some later rebuild happened to drop it; it is now dropped at the
    move, and the new group's is read again, so recall, names and slang there find the old group's
    memory straight away."""
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", ManualClock(T0))
    try:
        await app.memory.record_many(
            [make_message(1, text="周六开炉去香山脚下", sender_card="小红"), make_message(2, text="开炉!")]
        )
        await app.memory.record(make_message(3, chat="g2", sender="u2", text="超级群"))
        old, new = [(await app.memory.find_chat(f"test:{k}")).id for k in ("g1", "g2")]  # type: ignore[union-attr]
        entry = await mine(app.memory, old, "开炉", [1, 2], scope="chat")
        async with app.db.write() as session:
            await dictionary.decide(session, [entry], "approve", "admin", NOW, meaning="吃火锅")
            await save_vectors(session, "message", "m", [(1, old), (2, old), (3, new)], [[1.0, 0.0]] * 3)
        assert app.persons is not None and app.memory.recaller.glossary is not None
        glossary = app.memory.recaller.glossary
        caches = [app.memory.recaller.vectors, app.persons.resolver, glossary, glossary.source]
        for chat_id in (old, new):
            async with app.db.read() as session:
                await app.memory.recaller.vectors.search(session, [chat_id], "m", [1.0, 0.0], 5)
            await app.persons.resolver.mentions(chat_id, "小红 在吗")
            await glossary.expansion([chat_id], "开炉吗", [])
        assert old in set().union(*(cache.cached_chats() for cache in caches))  # type: ignore[attr-defined]
        assert await follow_chat_move(app, MOVED) is not None
        held = set().union(*(cache.cached_chats() for cache in caches))  # type: ignore[attr-defined]
        recalled = await answers.recall(app.memory, new, "香山")
        who = await app.persons.who(new, "小红")
        slang = await glossary.expansion([new], "开炉吗", [])
    finally:
        await app.close()
    assert held == set(), "nothing of either chat is kept from before the move"
    assert "香山" in "\n".join(recalled.lines)
    assert [r.platform_user_id for r in who.records] == ["u1"]
    assert slang is not None and "火锅" in slang


async def test_an_answer_whose_chat_was_merged_into_another_platforms_meanwhile_is_dropped_with_a_warning(
    tmp_path: Path, fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """`qunyi chats merge` may put a chat into one of another platform while an answer there waits: the
    adapter answering cannot reach that chat, so the answer is dropped, saying why, and nothing else."""
    app = await build_app(
        ConfigStore(llm_settings(fake_llm.base_url), None), tmp_path / "data", ManualClock(T0)
    )
    sent: list[str] = []

    async def send(chat_id: str, text: str, **kwargs: Any) -> ChatMessage:
        sent.append(chat_id)
        return make_message(900, chat=chat_id, sender="bot", text=text, is_bot=True)

    held = Hold(Answer("香山"))
    fake_llm.script(held)
    try:
        await app.memory.record(make_message(1, text="周六爬山", chat="g9", platform="other"))
        pending = await app.pipeline.record_live(
            make_message(2, text="@群忆 去哪座山", to_bot=True), send, asyncio.Event()
        )
        assert isinstance(pending, Pending)
        answering = asyncio.create_task(pending.respond())
        await asyncio.wait_for(held.reached.wait(), WAIT)
        source, target = await app.memory.chat("test", "g1"), await app.memory.chat("other", "g9")
        assert source is not None and target is not None
        await merge_chats(app.db, source.id, target.id, now=T0.timestamp())
        held.release.set()
        with caplog.at_level(logging.WARNING):
            outcome = await asyncio.wait_for(answering, WAIT)
        merged = [m.text for m in await app.memory.recent(target.id, 10)]
    finally:
        await app.close()
    assert outcome is not None and outcome.reason.endswith("not sent: the chat was merged into other:g9")
    assert sent == []
    assert "its chat was merged into other:g9 meanwhile, which the test adapter cannot reach" in caplog.text
    assert merged == ["周六爬山", "@群忆 去哪座山"], "the question stays, no answer is recorded"
