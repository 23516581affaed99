"""Normalised text that remembers where each of its characters came from.

Jargon discovery and matching and name mentions work on the normal form of memory.text.normalize
(NFKC + casefold), but evidence and matches must point into the original text ("ＹＹＤＳ" is found as
"yyds" and reported at its full-width position). Each grapheme cluster is normalised on its own, so a
span of the normalised text always maps back to whole graphemes of the original, and a decomposed
"e\u0301" composes to é as it does in a whole-string normalisation.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import regex

_GRAPHEME = regex.compile(r"\X")


@lru_cache(maxsize=65536)
def _fold(cluster: str) -> str:
    return unicodedata.normalize("NFKC", cluster).casefold()


def fold(text: str) -> str:
    """The normal form of `text` used for matching, without trimming (see `normalize_mapped`)."""
    if text.isascii():
        return text.lower()
    return "".join(_fold(g) for g in _GRAPHEME.findall(text))


@dataclass(frozen=True, slots=True)
class MappedText:
    """`text` normalised, with `starts[i]`/`ends[i]` = the original grapheme that produced char i."""

    original: str
    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original [start, end) covering normalised characters [start, end) (end > start)."""
        return self.starts[start], self.ends[end - 1]

    def original_text(self, start: int, end: int) -> str:
        """The original text of the normalised span [start, end)."""
        a, b = self.original_span(start, end)
        return self.original[a:b]


def normalize_mapped(text: str) -> MappedText:
    """Normalise `text` grapheme by grapheme (NFKC + casefold) and keep the offset map."""
    if text.isascii():
        positions = tuple(range(len(text)))
        return MappedText(text, text.lower(), positions, tuple(p + 1 for p in positions))
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for match in _GRAPHEME.finditer(text):
        folded = _fold(match.group())
        out.append(folded)
        starts.extend([match.start()] * len(folded))
        ends.extend([match.end()] * len(folded))
    return MappedText(text, "".join(out), tuple(starts), tuple(ends))
