"""Settings of the people memory as plain values (bot/ maps the `[persons]` config table onto them)."""

from __future__ import annotations

from dataclasses import dataclass

ALIAS_SOURCES = ("nickname", "card", "self", "others", "llm", "admin")


@dataclass(frozen=True, slots=True)
class PersonsConfig:
    """See config.toml `[persons]` for the meaning, unit and default of every field."""

    person_name_max_chars: int = 16
    alias_sources: tuple[str, ...] = ("nickname", "card", "self", "others")
    self_declared_rename: bool = True
    consolidation_batch: int = 500
    use_llm: bool = True
    forget_removes_messages: bool = False
    pronoun_max_age_seconds: float = 3600.0
    card_max_chars: int = 240
    card_tokens: int = 400
    max_cards: int = 4
    mention_min_confidence: float = 0.6

    def records(self, source: str) -> bool:
        """True when aliases of this source are recorded and used."""
        return source in self.alias_sources
