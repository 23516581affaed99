"""Recall's knobs as plain values (bot/config maps the `[recall]` table onto these).

Defaults are the weights tuned on the LoCoMo development split (see bot/evals/locomo.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memory.recall.timeexpr import NumericDateOrder


@dataclass(frozen=True, slots=True)
class RecallWeights:
    """Fusion, signal and salience weights. A signal multiplies a score by (1 + weight × strength)."""

    rrf_k: float = 60.0
    lexical: float = 1.0
    dense: float = 1.0
    window: float = 1.0
    history: float = 1.0
    preference: float = 0.5
    time_window: float = 0.5
    quote: float = 1.0
    person_fill: float = 0.05
    jargon: float = 0.5
    feedback: float = 1.0
    feedback_docs: int = 15
    feedback_terms: int = 8
    context_spread: float = 0.3
    keyword_overlap: float = 0.8
    quoted_phrase: float = 1.5
    person: float = 0.8
    time: float = 0.6
    reinforcement: float = 0.2
    recency_half_life_days: float = 365.0
    recency_floor: float = 0.9


@dataclass(frozen=True, slots=True)
class RecallSettings:
    """How recall runs: candidate pool size, fusion ("rrf" or "score"), stems in the keyword-overlap
    signal, the rerank switch, the weights, the time zone relative dates are counted in (`timezone`:
    None for the question time's own offset, "local" for the machine's, or an IANA name), and how a
    numeric date such as "4/5" is read (`numeric_date_order`)."""

    candidates: int = 200
    fusion: Literal["rrf", "score"] = "rrf"
    stems: bool = True
    rerank: bool = False
    rerank_top: int = 20
    rerank_timeout_seconds: float = 10.0
    query_embed_timeout_seconds: float = 2.0
    weights: RecallWeights = field(default_factory=RecallWeights)
    timezone: str | None = None
    numeric_date_order: NumericDateOrder = "month_first"
