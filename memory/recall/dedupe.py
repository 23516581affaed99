"""Duplicate content reinforces instead of repeating: hits with the same normalised text merge into the
best-scored one, whose `duplicates` list the others (salience then counts them)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from memory.recall.query import RecallHit
from memory.text import normalize

_SPACE_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)


def content_key(text: str) -> str:
    """Text compared for duplication: normalised, without spaces and punctuation."""
    return _SPACE_PUNCT.sub("", normalize(text))


def merge_duplicates(hits: Iterable[RecallHit]) -> list[RecallHit]:
    """One hit per distinct content, best score kept, in the original order of the kept hits."""
    kept: dict[tuple[str, str], RecallHit] = {}
    order: list[tuple[str, str]] = []
    for hit in sorted(hits, key=lambda h: -h.score):
        key = (hit.kind, content_key(hit.text) or f"#{hit.id}")
        held = kept.get(key)
        if held is None:
            kept[key] = hit
            order.append(key)
        else:
            held.duplicates.append(hit.id)
    return [kept[key] for key in order]
