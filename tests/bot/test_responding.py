"""A live message is recorded as it comes; the bot's answer runs off the adapter's feed (bot.responding):
one chat's answers in the order of its messages, different chats' at once, and a stop lets those under
way finish within the grace and drops the rest."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from sqlalchemy import select

from adapters.base import Adapter, MessageHandler
from bot.app import App, build_app
from bot.config import ConfigStore
from bot.config.settings import Settings
from bot.inbound import inbound_handler
from bot.llm import LLMSettings
from bot.responding import Responses
from memory.clock import ManualClock
from memory.models import Message
from memory.types import ChatKind, ChatMessage, InboundEvent, MessageDeletion
from tests.conftest import T0, make_message
from tests.fakes.openai_server import FakeOpenAI
from tests.waiting import WAIT


class GatedAdapter(Adapter):
    """An adapter whose sends wait at a gate per message answered (its id): `reached[id]` is set when
    the answer to it is being sent, and it goes out once `gates[id]` is set; `sent` holds the ids
    answered, in the order the answers went out."""

    platform = "test"

    def __init__(self, open_ids: tuple[str, ...] = ()) -> None:
        self.reached: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.gates: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        for message_id in open_ids:
            self.gates[message_id].set()
        self.sent: list[str] = []

    async def start(self, handler: MessageHandler) -> None:
        pass

    async def stop(self, within: float = 0.0) -> None:
        pass

    async def send_text(
        self, chat_id: str, text: str, *, chat_kind: ChatKind = ChatKind.GROUP, reply_to: str | None = None
    ) -> ChatMessage:
        assert reply_to is not None
        self.reached[reply_to].set()
        await self.gates[reply_to].wait()
        self.sent.append(reply_to)
        n = int(reply_to.removeprefix("m"))
        return make_message(1000 + n, chat=chat_id, sender="bot", text=text, is_bot=True)


@asynccontextmanager
async def _app(tmp_path: Path, fake_llm: FakeOpenAI) -> AsyncIterator[App]:
    llm = LLMSettings(enabled=True, base_url=fake_llm.base_url, model="fake-chat", max_retries=0)
    app = await build_app(ConfigStore(Settings(llm=llm), None), tmp_path / "data", ManualClock(T0))
    try:
        yield app
    finally:
        await app.close()


def _handler(app: App, adapter: Adapter, responses: Responses) -> MessageHandler:
    """`inbound_handler`, failing rather than hanging when it waits for an answer held at its gate."""
    handle = inbound_handler(app, adapter, asyncio.Event(), responses)

    async def bounded(event: InboundEvent) -> None:
        await asyncio.wait_for(handle(event), 30)

    return bounded


def _asking(n: int, chat: str = "g1") -> ChatMessage:
    return make_message(n, chat=chat, text=f"@群忆 问题 {n}", to_bot=True)


async def _stored(app: App) -> list[str]:
    """The platform ids of the messages stored, in the order they were recorded."""
    async with app.db.read() as session:
        found = await session.scalars(select(Message.platform_message_id).order_by(Message.id))
        return list(found)


async def test_an_answer_being_sent_holds_up_no_later_message(tmp_path: Path, fake_llm: FakeOpenAI) -> None:
    async with _app(tmp_path, fake_llm) as app:
        adapter, responses = GatedAdapter(open_ids=("m3",)), Responses()
        handle = _handler(app, adapter, responses)
        await handle(_asking(1, "A"))
        await adapter.reached["m1"].wait()  # A's answer is held at its send
        await handle(_asking(2, "A"))
        await handle(_asking(3, "B"))
        await handle(make_message(4, chat="B"))
        assert await _stored(app) == ["m1", "m2", "m3", "m4"], "recorded at once, in arrival order"
        await asyncio.wait_for(adapter.reached["m3"].wait(), WAIT)
        assert not adapter.reached["m2"].is_set(), "A's second answer waits for its first"
        adapter.gates["m1"].set()
        adapter.gates["m2"].set()
        await responses.stop()
        assert adapter.sent == ["m3", "m1", "m2"], "B answered while A's answer was held"
        assert await _stored(app) == ["m1", "m2", "m3", "m4", "m1003", "m1001", "m1002"]


async def test_one_chats_answers_go_out_in_the_order_of_its_messages(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    async with _app(tmp_path, fake_llm) as app:
        ids = tuple(f"m{n}" for n in range(1, 6))
        adapter, responses = GatedAdapter(open_ids=(*ids[1:], "m6")), Responses()
        handle = _handler(app, adapter, responses)
        for n in range(1, 6):
            await handle(_asking(n))
        await handle(_asking(6, "B"))
        await adapter.reached["m1"].wait()
        await adapter.reached["m6"].wait()  # another chat's answer, asked last, went through meanwhile
        assert not adapter.reached["m2"].is_set()
        adapter.gates["m1"].set()
        await responses.stop()
        assert adapter.sent == ["m6", *ids]


async def test_a_stop_lets_answers_finish_within_the_grace_then_drops_the_rest(
    tmp_path: Path, fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    async with _app(tmp_path, fake_llm) as app:
        adapter, responses = GatedAdapter(), Responses()
        handle = _handler(app, adapter, responses)
        await handle(_asking(1, "A"))
        await handle(_asking(2, "B"))
        await adapter.reached["m1"].wait()
        await adapter.reached["m2"].wait()
        adapter.gates["m1"].set()  # A's answer can go out; B's is held for ever
        await responses.stop(within=0.5)  # the grace: B's answer cannot finish in any
        assert adapter.sent == ["m1"]
        assert "stopping while 1 answers are still being prepared: they are dropped" in caplog.text
        assert await _stored(app) == ["m1", "m2", "m1001"], "every message kept, the finished answer too"
        await handle(_asking(3, "A"))
        assert await _stored(app) == ["m1", "m2", "m1001", "m3"], "after the stop: recorded, not answered"
        assert not adapter.reached["m3"].is_set()


async def test_a_failing_answer_is_logged_not_raised_into_the_adapter(
    tmp_path: Path, fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _app(tmp_path, fake_llm) as app:
        adapter, responses = GatedAdapter(open_ids=("m2",)), Responses()
        handle = _handler(app, adapter, responses)
        context_for_reply = app.memory.context_for_reply

        async def failing(chat_id: int, *args: object) -> object:
            if chat_id == (await app.memory.chat("test", "A")).id:  # type: ignore[union-attr]
                raise RuntimeError("boom")
            return await context_for_reply(chat_id, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(app.memory, "context_for_reply", failing)
        with caplog.at_level(logging.ERROR):
            await handle(_asking(1, "A"))  # returns: the failure comes later, in the answer's task
            await handle(_asking(2, "B"))
            await responses.stop()
        assert adapter.sent == ["m2"]
        [failure] = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert failure.name == "bot.inbound" and "handling a test event failed" in failure.getMessage()
        assert failure.exc_info is not None and "boom" in str(failure.exc_info[1])
        assert "never retrieved" not in caplog.text


async def test_a_message_deleted_while_its_answer_waits_is_not_answered(
    tmp_path: Path, fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    async with _app(tmp_path, fake_llm) as app:
        adapter, responses = GatedAdapter(), Responses()
        handle = _handler(app, adapter, responses)
        await handle(_asking(1))
        await adapter.reached["m1"].wait()
        await handle(_asking(2))  # its answer waits for the first
        await handle(MessageDeletion("test", "g1", "m2"))
        adapter.gates["m1"].set()
        with caplog.at_level(logging.ERROR):
            await responses.stop()
        assert adapter.sent == ["m1"]
        assert await _stored(app) == ["m1", "m1001"]
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
