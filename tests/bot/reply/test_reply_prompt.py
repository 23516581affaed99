"""The reply model's messages."""

from __future__ import annotations

from bot.reply.prompt import MESSAGE_CHARS, reply_messages
from memory.context import ReplyContext


def test_a_huge_message_reaches_the_model_as_its_head_without_a_broken_character() -> None:
    messages = reply_messages("群忆", ReplyContext(), "小红", "周六去爬山吗？" + "👍🏽" * 100_000)
    asked = messages[-1]["content"]
    assert asked.startswith("小红: 周六去爬山吗？") and asked.endswith("👍🏽…")
    assert len(asked) <= MESSAGE_CHARS
    short = reply_messages("群忆", ReplyContext(), "小红", "在吗")
    assert short[-1]["content"] == "小红: 在吗"
