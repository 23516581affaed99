"""The weight rule on a small graph worked out by hand, and the iterative SCC pass."""

import pytest

from memory.notes import format_hints
from memory.notes.weights import (
    NoteScore,
    compute_weights,
    low_value,
    strongly_connected_components,
    top_hints,
)

# A → B, C, D      B → E, F      D → X (missing)      F → G      G → H, C      H → G (cycle G↔H)
# I → I (self), C  C, E leaves.
GRAPH = {
    "A": {"B", "C", "D"},
    "B": {"E", "F"},
    "C": set(),
    "D": {"X"},
    "E": set(),
    "F": {"G"},
    "G": {"H", "C"},
    "H": {"G"},
    "I": {"I", "C"},
}
# By hand: leaves C = E = 1; D has one link to a missing note (weight 1) → 1 / max(0, 1) = 1.
# {G, H} is a cycle: G's link to H counts 1, C is 1 → (1 + 1) / max(1, 1) = 2; H → G counts 1 → 1.
# F → G: 2 / 1 = 2.   B → E, F: (1 + 2) / 1 = 3.   A → B, C, D: (3 + 1 + 1) / 2 = 2.5.
# I: the self-link is dropped, one link to C → 1.
EXPECTED = {"A": 2.5, "B": 3.0, "C": 1.0, "D": 1.0, "E": 1.0, "F": 2.0, "G": 2.0, "H": 1.0, "I": 1.0}


def test_weights_match_the_hand_computation() -> None:
    assert compute_weights(GRAPH) == pytest.approx(EXPECTED)


def test_missing_targets_get_no_weight_of_their_own() -> None:
    assert "X" not in compute_weights(GRAPH)


def test_hints_highest_first_ties_by_name() -> None:
    scores = [NoteScore(name, w, 10) for name, w in compute_weights(GRAPH).items()]
    assert [s.name for s in top_hints(scores, 4)] == ["B", "A", "F", "G"]


def test_low_value_orders_lowest_first_below_threshold() -> None:
    scores = [
        NoteScore("long", 1.0, 1000),  # 0.001
        NoteScore("mid", 2.0, 400),  # 0.005
        NoteScore("short", 1.0, 10),  # 0.1
        NoteScore("empty", 1.0, 0),  # 1 / max(0, 1) = 1.0
        NoteScore("tie", 1.0, 200),  # 0.005, ties with "mid" → by name
    ]
    assert [s.name for s in low_value(scores, 0.01, 10)] == ["long", "mid", "tie"]
    assert [s.name for s in low_value(scores, 0.01, 2)] == ["long", "mid"]
    assert low_value(scores, 0.0005, 10) == []


def test_scc_order_is_sinks_first_and_deep_chains_do_not_recurse() -> None:
    order = strongly_connected_components({"a": ["b"], "b": ["c", "a"], "c": []})
    assert [sorted(c) for c in order] == [["c"], ["a", "b"]]
    chain = {str(i): [str(i + 1)] for i in range(20_000)} | {"20000": []}
    weights = compute_weights(chain)
    assert len(weights) == 20_001
    assert weights["0"] == 1.0


def test_hints_section_for_the_reply_context() -> None:
    scores = top_hints([NoteScore("规则", 2.0, 5), NoteScore("小明", 3.0, 5)], 2)
    assert format_hints(scores) == "Notes: [[小明]] [[规则]]"
    assert format_hints([]) == ""
