"""Pseudo-relevance feedback: words that the best candidates share (the lexical, window and dense
lists fused), and the rest of the candidates do not, are searched again as a second candidate list.
It finds the turns that answer a question in other words ("activities" → the pottery class and the
camping trip named near it). When the candidates are too few to have a rest, the chat's latest
messages stand for it (see `Recaller._feedback`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from memory.recall.keywords import STOP_WORDS, Keyword, stem


def _terms(tokens: Iterable[str]) -> set[str]:
    found = set()
    for word in tokens:
        if word in STOP_WORDS or word.isdigit() or len(word) < 2 or (word.isascii() and len(word) < 3):
            continue
        found.add(word)
    return found


def expansion_terms(
    top: Sequence[Sequence[str]], rest: Sequence[Sequence[str]], exclude: Iterable[Keyword], limit: int
) -> list[Keyword]:
    """Up to `limit` words frequent in the `top` documents and rare in the `rest` (documents given as
    their index tokens), as keywords."""
    if len(top) < 2 or limit <= 0:
        return []
    skip = {k.match for k in exclude}
    top_df: Counter[str] = Counter()
    for doc in top:
        top_df.update(_terms(doc))
    rest_df: Counter[str] = Counter()
    for doc in rest:
        rest_df.update(_terms(doc))
    scored = []
    for term, df in top_df.items():
        if df < 2 or stem(term) in skip or term in skip:
            continue
        weight = (df / len(top)) * math.log((len(rest) + 1) / (rest_df[term] + 1) + 1)
        scored.append((weight, term))
    scored.sort(reverse=True)
    chosen = [term for _, term in scored[:limit]]
    return [Keyword(t, stem(t)) for t in chosen]


def feedback_match(original: Sequence[Keyword], expansion: Sequence[Keyword]) -> str | None:
    """The MATCH expression of the second pass: original keywords or expansion words."""
    if not expansion:
        return None
    seen = dict.fromkeys([*(k.fts() for k in original), *(k.fts() for k in expansion)])
    return " OR ".join(seen) if seen else None
