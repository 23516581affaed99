"""The short notes section of the reply context."""

from __future__ import annotations

from collections.abc import Sequence

from memory.notes.weights import NoteScore


def format_hints(scores: Sequence[NoteScore], heading: str = "Notes") -> str:
    """One line naming the hinted notes as links, e.g. `Notes: [[规则]] [[小明]]`; empty when none."""
    if not scores:
        return ""
    return f"{heading}: " + " ".join(f"[[{s.name}]]" for s in scores)
