"""jieba-based tokens for the full-text index and for queries; a cheap token estimate for budgets."""

from __future__ import annotations

import logging
import re
from functools import lru_cache

import jieba

from memory.text.normalize import normalize

jieba.setLogLevel(logging.WARNING)

_WORD = re.compile(r"\w", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9_]+")
# Characters neither ASCII nor CJK, and those of them beyond the basic plane (emoji, regional indicators).
_WIDE = re.compile(r"[^\x00-\x7f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_ASTRAL = re.compile(r"[\U00010000-\U0001ffff\U00030000-\U0010ffff]")


@lru_cache(maxsize=1)
def _ready() -> bool:
    jieba.initialize()
    return True


def prepare() -> None:
    """Load jieba's dictionary and part-of-speech tags now (about a second, once per process) instead
    of inside the first message that needs them. Safe from any thread: jieba builds its dictionary
    under its own lock and once, and the tags load under the import lock."""
    _ready()
    import jieba.posseg  # noqa: F401  (its module body loads the tag table)


def words(text: str) -> list[str]:
    """Word tokens of normalised text (jieba precise mode), punctuation and spaces dropped."""
    _ready()
    return [tok for tok in jieba.lcut(normalize(text)) if _WORD.search(tok)]


def index_text(text: str) -> str:
    """The space-joined search-mode tokens stored in the FTS index (Chinese and English alike), of
    the whole text: every word of a message (up to a million characters, about two seconds of jieba)
    or of a long topic is searchable."""
    _ready()
    return " ".join(tok for tok in jieba.cut_for_search(normalize(text)) if _WORD.search(tok))


def search_terms(query: str) -> list[str]:
    """Distinct query tokens in order, as the index would have stored them."""
    seen: dict[str, None] = {}
    for tok in index_text(query).split():
        seen.setdefault(tok, None)
    return list(seen)


def estimate_tokens(text: str) -> int:
    """A model-independent token estimate: one per CJK character, about four ASCII characters per
    token, and one per other character, two beyond the basic plane: an emoji, a flag's letters, kana,
    Hangul or full-width punctuation is a token or more to a model's tokenizer, never a quarter of one
    (a message of emoji alone was estimated at an eighth of its cost)."""
    cjk = len(_CJK.findall(text))
    wide = len(_WIDE.findall(text))
    astral = len(_ASTRAL.findall(text))
    return cjk + wide + astral + (len(text) - cjk - wide + 3) // 4
