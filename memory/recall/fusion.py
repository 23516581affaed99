"""Reciprocal-rank fusion of several ranked candidate lists into one score per memory."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


def reciprocal_rank_fusion(
    rankings: Sequence[tuple[float, Sequence[Key]]], k: float = 60.0
) -> dict[Key, float]:
    """Σ weight / (k + rank) over the lists a key appears in (rank from 1; first occurrence counts)."""
    fused: dict[Key, float] = {}
    for weight, ranking in rankings:
        seen: set[Key] = set()
        for rank, key in enumerate(ranking, start=1):
            if key in seen:
                continue
            seen.add(key)
            fused[key] = fused.get(key, 0.0) + weight / (k + rank)
    return fused


def score_fusion(rankings: Sequence[tuple[float, Sequence[tuple[Key, float]]]]) -> dict[Key, float]:
    """Σ weight × min-max-normalised score over the lists (a list of equal scores decays by rank)."""
    fused: dict[Key, float] = {}
    for weight, ranking in rankings:
        if not ranking:
            continue
        scores = [score for _, score in ranking]
        high, low = max(scores), min(scores)
        seen: set[Key] = set()
        for rank, (key, score) in enumerate(ranking):
            if key in seen:
                continue
            seen.add(key)
            norm = (score - low) / (high - low) if high > low else 1.0 / (1.0 + 0.1 * rank)
            fused[key] = fused.get(key, 0.0) + weight * norm
    return fused
