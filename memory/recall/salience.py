"""memU-style salience: reinforcement × recency decay, applied after relevance.

    factor = (1 + w_r · ln(reinforcement + 1)) × (floor + (1 − floor) · 0.5 ^ (age / half_life))

`reinforcement` is how often a memory was recalled (ChatHistory `count`) plus merged duplicates. The
"1 +" keeps a never-recalled memory findable (memU's bare ln(count + 1) would zero it); the floor keeps
old memories findable when they are the only match.
"""

from __future__ import annotations

import math
from datetime import datetime

from memory.recall.settings import RecallWeights


def reinforcement_factor(reinforcement: int, weights: RecallWeights) -> float:
    return 1.0 + weights.reinforcement * math.log(max(0, reinforcement) + 1)


def recency_factor(when: datetime, now: datetime, weights: RecallWeights) -> float:
    if weights.recency_half_life_days <= 0:
        return 1.0
    age_days = max(0.0, (now - when).total_seconds() / 86400)
    decay = 0.5 ** (age_days / weights.recency_half_life_days)
    return weights.recency_floor + (1.0 - weights.recency_floor) * decay


def salience(reinforcement: int, when: datetime, now: datetime, weights: RecallWeights) -> float:
    """The salience multiplier of a memory (see the module docstring)."""
    return reinforcement_factor(reinforcement, weights) * recency_factor(when, now, weights)
