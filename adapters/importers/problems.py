"""A located problem in an import file: reported, skipped, never silent."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ParseProblem:
    location: str
    reason: str

    def __str__(self) -> str:
        return f"{self.location}: {self.reason}"
