"""Small helpers for the hand-written SQL of the full-text and recall queries."""

from __future__ import annotations

from collections.abc import Sequence


def in_list(name: str, values: Sequence[object], params: dict[str, object]) -> str:
    """Bind `values` as `:name0, :name1, …` into `params` and return that list for an `IN (…)`
    (`NULL` when empty, which matches nothing)."""
    names = []
    for i, value in enumerate(values):
        params[f"{name}{i}"] = value
        names.append(f":{name}{i}")
    return ", ".join(names) or "NULL"
