"""What the reply model answers and what reaches the chat — real client, fake server."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from adapters.base import SendError
from bot.app import build_app
from bot.config import ConfigStore
from bot.config.settings import ReplySettings, Settings, ToolsSettings
from bot.llm import LLMSettings
from bot.reply.pipeline import Send
from memory.clock import ManualClock
from memory.types import ChatMessage
from tests.conftest import T0, make_message
from tests.fakes.openai_server import Answer, FakeOpenAI


def llm_settings(base_url: str) -> Settings:
    llm = LLMSettings(enabled=True, base_url=base_url, model="fake-chat", max_retries=0, backoff_seconds=0)
    return Settings(llm=llm)


def recording_send() -> tuple[list[str], Send]:
    """The texts sent, and a send function that records each and returns it as the bot's message."""
    sent: list[str] = []

    async def send(chat_id: str, text: str, **kwargs: Any) -> ChatMessage:
        sent.append(text)
        return make_message(900 + len(sent), text=text, sender="bot", is_bot=True)

    return sent, send


async def test_a_reasoning_models_thoughts_never_reach_the_chat(tmp_path: Path, fake_llm: FakeOpenAI) -> None:
    config = ConfigStore(llm_settings(fake_llm.base_url), None)
    app = await build_app(config, tmp_path / "data", ManualClock(T0))
    sent, send = recording_send()
    fake_llm.script(
        Answer("用户问我在不在。我应该简短回答。\n</think>\n\n在的"),  # R1 distills: <think> is in the prompt
        Answer("<think>用户问开炉的时间，我得先回忆一下上次", finish_reason="length"),
    )
    try:
        first = await app.pipeline.handle(make_message(1, text="@群忆 在吗", to_bot=True), send)
        second = await app.pipeline.handle(make_message(2, text="@群忆 开炉是哪天", to_bot=True), send)
    finally:
        await app.close()
    assert first.reply == "在的"
    assert second.reply is None and "empty" in second.reason
    assert sent == ["在的"]


@pytest.mark.parametrize("tools", [True, False], ids=["with tools", "without tools"])
async def test_a_reply_a_content_filter_stopped_is_not_sent_half_said(
    tmp_path: Path, fake_llm: FakeOpenAI, tools: bool
) -> None:
    """What a content filter kept of a reply was sent to the chat, cut mid-sentence ("周五晚上我们"); the
    reply is now refused like an emptied one, and nothing is sent."""
    settings = llm_settings(fake_llm.base_url)
    settings = settings.model_copy(update={"tools": ToolsSettings(enabled=tools)})
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    sent, send = recording_send()
    fake_llm.script(Answer("周五晚上我们", finish_reason="content_filter"))
    try:
        outcome = await app.pipeline.handle(make_message(1, text="@群忆 开炉是哪天", to_bot=True), send)
    finally:
        await app.close()
    assert outcome.recorded and outcome.reply is None
    assert "finish_reason content_filter" in outcome.reason
    assert sent == []


async def test_an_answer_the_platform_refuses_is_logged_not_raised(
    tmp_path: Path, fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """The bot muted in a QQ group or kicked from a Telegram chat: sending raised SendError out of the
    pipeline, and the adapter loop logged a traceback for every message addressed to the bot."""
    config = ConfigStore(llm_settings(fake_llm.base_url), None)
    app = await build_app(config, tmp_path / "data", ManualClock(T0))

    async def send(chat_id: str, text: str, **kwargs: Any) -> ChatMessage:
        raise SendError("send_group_msg failed: retcode 120 (bot is muted)")

    fake_llm.script(Answer("周五晚上"))
    try:
        with caplog.at_level(logging.WARNING):
            answered = await app.pipeline.handle(make_message(1, text="@群忆 开炉是哪天", to_bot=True), send)
            command = await app.pipeline.handle(make_message(2, text="/who 小红"), send)
        stored = [(m.text, m.is_bot) for m in await app.memory.recent(1, 5)]
    finally:
        await app.close()
    assert answered.recorded and answered.reply is None and "muted" in answered.reason
    assert command.recorded and command.reply is None and command.reason.startswith("command; not sent")
    assert stored == [("@群忆 开炉是哪天", False), ("/who 小红", False)]
    refused = [r for r in caplog.records if "not sent" in r.getMessage()]
    assert len(refused) == 2 and all(r.exc_info is None for r in refused)


async def test_an_overlong_answer_is_cut_at_max_chars_between_graphemes_and_stored_as_sent(
    tmp_path: Path, fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """A model told to write a lot (or a raised max_tokens) answered with 30,000 characters: QQ got it
    whole and the chat's memory kept it whole."""
    settings = llm_settings(fake_llm.base_url)
    config = ConfigStore(settings.model_copy(update={"reply": ReplySettings(max_chars=60)}), None)
    app = await build_app(config, tmp_path / "data", ManualClock(T0))
    sent, send = recording_send()
    family = "👨\u200d👩\u200d👧"  # one grapheme of five code points
    long_answer = "开炉" * 28 + family + "后面还有很多" * 5000
    fake_llm.script(Answer(long_answer), Answer("好的"))
    try:
        with caplog.at_level(logging.WARNING):
            cut = await app.pipeline.handle(make_message(1, text="@群忆 讲讲开炉", to_bot=True), send)
            short = await app.pipeline.handle(make_message(2, text="@群忆 在吗", to_bot=True), send)
        stored = [m.text for m in await app.memory.recent(1, 5) if m.is_bot]
    finally:
        await app.close()
    assert sent[0] == "开炉" * 28 + "…"  # the family would end at 61: it is left out whole, not split
    assert len(sent[0]) <= 60 and cut.reply == sent[0]
    assert short.reply == "好的" and sent[1] == "好的"
    assert stored == sent
    assert any("cut from" in r.getMessage() for r in caplog.records)


async def test_control_characters_and_lone_surrogates_in_an_answer_are_never_sent(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """The model's answer went to the platform as it came (a NUL, a bell, a lone surrogate escaped in
    the API's JSON) while memory kept it cleaned: what was sent and what is stored differed."""
    config = ConfigStore(llm_settings(fake_llm.base_url), None)
    app = await build_app(config, tmp_path / "data", ManualClock(T0))
    sent, send = recording_send()
    fake_llm.script(Answer("周五\u0000晚上\u0007见\ud800\n不见不散"))
    try:
        answered = await app.pipeline.handle(make_message(1, text="@群忆 开炉是哪天", to_bot=True), send)
        stored = [m.text for m in await app.memory.recent(1, 5) if m.is_bot]
    finally:
        await app.close()
    assert sent == ["周五晚上见\n不见不散"] and answered.reply == sent[0]
    assert stored == sent
