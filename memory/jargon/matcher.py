"""Find every dictionary term in a text in one pass (Aho-Corasick), for the reply context.

Terms and text are compared in the normal form of normalize_mapped (NFKC + casefold per grapheme),
so "ＹＹＤＳ" and "YYDS" find "yyds". A term's Chinese edges may sit anywhere; its Latin edges must sit
on word boundaries ("ok" is not found in "book", "ok" is found in "ok了"). Each term is reported once
per text, at its first acceptable place; a match lying inside a longer one is dropped, so where one
term contains another only the longest is reported there ("yyds永远的神", not also "yyds"), while
partly overlapping matches are both kept. Emoji and other symbols in a term
are matched literally. Positions are offsets into the original text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import ahocorasick

from memory.jargon.spans import latin_edges_ok
from memory.text.mapped import fold, normalize_mapped


@dataclass(frozen=True, slots=True)
class Match:
    """A term found in a text: `term` as given to the matcher, [start, end) in the original text."""

    term: str
    start: int
    end: int


class JargonMatcher:
    """A multi-pattern matcher over dictionary terms; build a new one when the dictionary changes.

    Terms that normalise to the same form are one pattern (the first spelling given is reported);
    blank terms are ignored.
    """

    def __init__(self, terms: Iterable[str]) -> None:
        self._automaton = ahocorasick.Automaton()
        spellings: dict[str, str] = {}
        for term in terms:
            key = fold(term).strip()
            if key and key not in spellings:
                spellings[key] = term
                self._automaton.add_word(key, (key, term))
        self._size = len(spellings)
        if spellings:
            self._automaton.make_automaton()

    def __len__(self) -> int:
        return self._size

    def find(self, text: str) -> list[Match]:
        """Every term present in `text`, each once, ordered by position (see module docstring)."""
        if not self._size or not text:
            return []
        mapped = normalize_mapped(text)
        norm = mapped.text
        found: list[tuple[int, int, str, str]] = []
        for last, (key, term) in self._automaton.iter(norm):
            start, end = last - len(key) + 1, last + 1
            if latin_edges_ok(norm, start, end):
                found.append((start, end, key, term))
        # Outermost first: a match lying inside an already kept one is dropped (longest wins).
        found.sort(key=lambda f: (f[0], -f[1]))
        seen: set[str] = set()
        matches: list[Match] = []
        cover_end = -1
        for start, end, key, term in found:
            if end <= cover_end:
                continue
            cover_end = end
            if key in seen:
                continue
            seen.add(key)
            a, b = mapped.original_span(start, end)
            matches.append(Match(term, a, b))
        return matches

    def terms_in(self, text: str) -> list[str]:
        """The distinct terms present in `text`, in order of first appearance."""
        return [m.term for m in self.find(text)]
