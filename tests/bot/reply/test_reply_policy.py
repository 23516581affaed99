"""When the bot answers: names and keywords from the config."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from bot.config.loader import parse_settings
from bot.reply.policy import decide
from memory.types import ChatMessage


def _decide(config: str, text: str) -> tuple[bool, str]:
    settings = parse_settings(config, "config.toml", env={})
    message = ChatMessage("console", "console", "1", "me", text, datetime(2026, 3, 1, tzinfo=UTC))
    decision = decide(message, settings.reply, settings.bot, False, random.Random(0))
    return decision.reply, decision.reason


@pytest.mark.parametrize(
    "config",
    [
        '[reply]\nkeywords = [""]',
        '[reply]\nkeywords = [" "]',
        '[reply]\nkeywords = ["\u3000", "开会"]',  # a full-width space, as a Chinese keyboard types it
        '[bot]\naliases = ["群忆", " "]',
    ],
)
def test_a_blank_keyword_or_alias_matches_nothing(config: str) -> None:
    """A blank entry used to match every message (it normalises to "", which every text contains),
    so the bot answered the whole chat; an empty string was already ignored."""
    assert _decide(config, "今天天气不错") == (False, "not addressed")


def test_keywords_and_aliases_still_match_full_width_and_case_folded() -> None:
    assert _decide('[reply]\nkeywords = ["\u3000", "ＡＰＩ"]', "这个api挂了") == (True, "keyword")
    assert _decide('[bot]\naliases = [" ", "Qunyi"]', "QUNYI 在吗") == (True, "named")
