"""Quoted phrases in a question — "…", “…”, 「…」, 『…』, '…' — the strongest recall signal.

A memory containing a quoted phrase verbatim (after normalisation) is almost surely the one meant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.text import normalize

_PAIRS = (('"', '"'), ("“", "”"), ("「", "」"), ("『", "』"), ("＂", "＂"), ("‘", "’"), ("《", "》"))
_PATTERNS = [
    re.compile(re.escape(a) + r"([^" + re.escape(a + b) + r"\n]{1,80})" + re.escape(b)) for a, b in _PAIRS
]
# Single quotes only around a phrase that starts and ends on word boundaries, so "don't" is no quote.
_SINGLE = re.compile(r"(?<!\w)'([^'\n]{2,80})'(?!\w)")
_MIN_CJK = 2
_MIN_LATIN = 3


@dataclass(frozen=True, slots=True)
class Quote:
    """A quoted phrase: `phrase` as written, `key` normalised for matching, `span` in the question."""

    phrase: str
    key: str
    span: tuple[int, int]


def _long_enough(key: str) -> bool:
    return len(key) >= (_MIN_LATIN if key.isascii() else _MIN_CJK)


def extract_quotes(text: str) -> list[Quote]:
    """The quoted phrases of `text`, left to right, each at least 2 CJK or 3 Latin characters."""
    # The outermost of nested quotes is the phrase meant: 「打本“可以”」 asks for 打本“可以”, not 可以.
    paired = sorted((m for p in _PATTERNS for m in p.finditer(text)), key=lambda m: (m.start(), -m.end()))
    found: list[Quote] = []
    for m in [*paired, *_SINGLE.finditer(text)]:
        if any(m.start() < q.span[1] and q.span[0] < m.end() for q in found):
            continue
        key = normalize(m.group(1))
        if _long_enough(key):
            found.append(Quote(m.group(1).strip(), key, m.span()))
    return sorted(found, key=lambda q: q.span)


def quote_match(quotes: list[Quote], normalized_doc: str) -> float:
    """The share of quoted phrases found verbatim in an already-normalised document (0.0–1.0)."""
    if not quotes:
        return 0.0
    return sum(1 for q in quotes if q.key in normalized_doc) / len(quotes)
