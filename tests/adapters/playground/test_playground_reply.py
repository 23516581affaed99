"""End to end: the playground built from config, the real reply pipeline, the fake model on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from adapters.playground import PlaygroundAdapter
from bot.adapters_factory import build_adapters
from bot.app import build_app
from bot.config import ConfigStore
from bot.config.settings import Settings
from bot.llm import LLMSettings
from memory.clock import ManualClock
from memory.types import ChatMoved, InboundEvent
from tests.adapters.playground.conftest import TOKEN, Playground
from tests.conftest import T0
from tests.fakes.openai_server import Answer, FakeOpenAI


async def test_a_member_addressing_the_bot_is_answered_in_that_chat_only(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    settings = Settings(
        llm=LLMSettings(enabled=True, base_url=fake_llm.base_url, model="fake-chat", max_retries=0),
        adapters={"enabled": ["playground"], "playground": {"port": 0, "token": TOKEN}},  # type: ignore[arg-type]
    )
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    [adapter] = build_adapters(app)
    assert isinstance(adapter, PlaygroundAdapter)
    stop = asyncio.Event()

    async def on_message(event: InboundEvent) -> None:  # as `qunyi run` hands events to the pipeline
        assert not isinstance(event, ChatMoved), "the playground moves no chat"
        await app.pipeline.handle_inbound(event, adapter.send_text, stop)

    fake_llm.script(Answer("周五晚上九点开炉"))
    await adapter.start(on_message)
    assert adapter.url is not None
    playground = Playground(adapter, aiohttp.ClientSession(), adapter.url.split("/#", 1)[0])
    try:
        assert (await playground.post(chat_id="g2", user="bob", text="暗号是蓝色大象"))[0] == 200
        status, body = await playground.post(chat_id="g1", user="alice", text="@群忆 周五几点开炉？")
        assert status == 200, body
        asked = body["message"]
        in_g1 = await playground.transcript("g1")
        in_g2 = await playground.transcript("g2")
    finally:
        await playground.session.close()
        await adapter.stop()
        await app.close()
    assert [(m["sender"], m["text"], m["is_bot"]) for m in in_g1] == [
        ("alice", "@群忆 周五几点开炉？", False),
        ("群忆", "周五晚上九点开炉", True),
    ]
    assert in_g1[1]["reply_to"] == asked["id"] and asked["to_bot"]
    assert [m["text"] for m in in_g2] == ["暗号是蓝色大象"], "the answer stays in the chat it answers"
    [request] = fake_llm.chat_requests
    prompt = " ".join(str(m.get("content")) for m in request.messages)
    assert "周五几点开炉" in prompt and "蓝色大象" not in prompt, "memory of g2 stays out of g1's prompt"
