"""Hypothesis strategies for untrusted input: any JSON value, mutations of a real fixture, odd text."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

FIXTURES = Path(__file__).parent / "fixtures"

# Characters parsers trip on: CQ and FTS5 syntax, brackets, line and paragraph separators, invisible and
# combining marks, surrogate-pair emoji, a Hangul filler, full-width forms, an RTL override.
ODD_CHARACTERS = (
    "[]&,=:;\"'*^-+()<>＜＞{}#@＠/\\\n\r\t\x00\x1b\u2028\u2029\u0085\u200b\u200d\u00ad\u202e\u3164"
    "\ufe0f\u0301\u0600\U0001f468\U0001f469\U0001f3f4\U000e0067\U0001f1e8\U0001f1f3小红前天三周年月日"
)
texts = st.text(st.one_of(st.sampled_from(ODD_CHARACTERS), st.characters()), max_size=40)
"""Short text mixing arbitrary code points (never a lone surrogate: `str` strategies exclude them) with
the characters above."""

numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 2**31, -(2**31), 2**63, 10**11, 10**13, 253402300800, -62135596800]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.one_of(texts, st.sampled_from(["id", "type"])), children, max_size=5),
    ),
    max_leaves=25,
)
"""Any value `json.loads` can give (NaN and infinities included, as Python's json reads them)."""


def fixture_json(relative: str) -> Any:
    """A JSON fixture under tests/fixtures, parsed."""
    return json.loads((FIXTURES / relative).read_text(encoding="utf-8"))


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside `value` (as a path of keys and indexes), the root first."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _replaced(value: Any, path: tuple[Any, ...], change: Callable[[Any], Any]) -> Any:
    """A copy of `value` with the thing at `path` changed (`change` returns `_DROP` to remove it)."""
    if not path:
        return change(value)
    head, rest = path[0], path[1:]
    copy: Any = dict(value) if isinstance(value, dict) else list(value)
    new = _replaced(value[head], rest, change)
    if new is _DROP:
        del copy[head]
    else:
        copy[head] = new
    return copy


_DROP = object()


def _change(action: str, key: str, value: Any) -> Callable[[Any], Any]:
    """What a mutation does to the value it is applied to."""

    def changed(old: Any) -> Any:
        if action == "drop":
            return _DROP
        if action == "add":
            return {**old, key: value} if isinstance(old, dict) else old
        return value

    return changed


@st.composite
def mutated(draw: st.DrawFn, document: Any, max_changes: int = 3) -> Any:
    """`document` (a real fixture) with a few values replaced by arbitrary JSON, dropped, or given an
    extra key, so the fuzzing reaches past the first check a parser makes."""
    for _ in range(draw(st.integers(min_value=1, max_value=max_changes))):
        path = draw(st.sampled_from(_paths(document)))
        action = draw(st.sampled_from(["replace", "drop", "add", "scalar"] if path else ["replace", "add"]))
        key = draw(texts) if action == "add" else ""
        value = draw(scalars if action == "scalar" else json_values)
        document = _replaced(document, path, _change(action, key, value))
    return document
