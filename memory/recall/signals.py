"""Step 3 of recall: MemPalace-style signals read from the question, each multiplying a hit's score
by (1 + weight × strength), strength in [0, 1]:

- keyword overlap: share of the question's keywords the memory contains, each weighted by its
  rarity in the chats searched;
- quoted phrase: share of quoted phrases it contains verbatim;
- person: the people named were its speaker (1.0), are mentioned or took part (0.7), or are named in
  its text (0.5) — averaged over the names in the question;
- time: how close it lies to the window a time expression points at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memory.recall.keywords import Keyword, keyword_overlap
from memory.recall.persons import NamedPerson
from memory.recall.query import RecallHit
from memory.recall.quotes import Quote, quote_match
from memory.recall.settings import RecallWeights
from memory.recall.timeexpr import TimeHint
from memory.text import normalize


@dataclass(frozen=True, slots=True)
class QuestionSignals:
    """What the question says besides its words."""

    keywords: Sequence[Keyword] = ()
    quotes: Sequence[Quote] = ()
    named: Sequence[NamedPerson] = ()
    hints: Sequence[TimeHint] = ()
    names: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    platform_ids: Mapping[int, str] = field(default_factory=dict)
    keyword_weights: Mapping[str, float] = field(default_factory=dict)


def person_strength(
    hit: RecallHit, named: Sequence[NamedPerson], signals: QuestionSignals, doc: str
) -> float:
    if not named:
        return 0.0
    total = 0.0
    for person in named:
        uids = {signals.platform_ids[p] for p in person.person_ids if p in signals.platform_ids}
        if hit.person_id in person.person_ids:
            total += 1.0
        elif uids & set(hit.mentions) or person.person_ids & set(hit.participants):
            total += 0.7
        elif any(normalize(n) in doc for p in person.person_ids for n in signals.names.get(p, ()) if n):
            total += 0.5
    return total / len(named)


def time_strength(hit: RecallHit, hints: Sequence[TimeHint]) -> float:
    return max((h.proximity(hit.time) for h in hints), default=0.0)


def strengths(hit: RecallHit, signals: QuestionSignals) -> dict[str, float]:
    """Each signal's strength for one hit."""
    doc = normalize(hit.matched_text)
    return {
        "keyword_overlap": keyword_overlap(signals.keywords, doc, signals.keyword_weights),
        "quoted_phrase": quote_match(list(signals.quotes), doc),
        "person": person_strength(hit, signals.named, signals, doc),
        "time": time_strength(hit, signals.hints),
    }


def apply_signals(hits: Sequence[RecallHit], signals: QuestionSignals, weights: RecallWeights) -> None:
    """Multiply each hit's score by its signal boosts, recording the factors in `hit.signals`."""
    for hit in hits:
        for name, strength in strengths(hit, signals).items():
            weight = getattr(weights, name)
            if strength <= 0 or weight <= 0:
                continue
            factor = 1.0 + weight * strength
            hit.score *= factor
            hit.signals[name] = round(factor, 4)
