"""Near-duplicate topic titles: "周末爬山计划" and "周末爬山计划!" name one topic and are merged."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import SequenceMatcher
from typing import TypeVar

from memory.text import normalize

T = TypeVar("T")


def _key(title: str) -> str:
    return "".join(ch for ch in normalize(title) if ch.isalnum())


def title_ratio(a: str, b: str) -> float:
    """Similarity of two titles in [0, 1] (difflib's ratio over normalised letters and digits)."""
    ka, kb = _key(a), _key(b)
    if not ka or not kb:
        return 0.0
    if ka == kb:
        return 1.0
    return SequenceMatcher(None, ka, kb, autojunk=False).ratio()


def most_similar(title: str, candidates: Iterable[tuple[T, str]], min_ratio: float) -> T | None:
    """The candidate whose title is most similar to `title`, if at least `min_ratio` (first on ties)."""
    best: T | None = None
    best_ratio = min_ratio
    for item, other in candidates:
        ratio = title_ratio(title, other)
        if ratio >= best_ratio and (best is None or ratio > best_ratio):
            best, best_ratio = item, ratio
    return best
