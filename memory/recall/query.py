"""What recall is asked (`RecallQuery`) and what it answers (`RecallHit`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

HitKind = Literal["message", "history"]


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A half-open interval [start, end) of aware datetimes; either side may be open (None)."""

    start: datetime | None = None
    end: datetime | None = None

    def contains(self, when: datetime) -> bool:
        return (self.start is None or when >= self.start) and (self.end is None or when < self.end)


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """One recall request, scoped by `where`.

    `chat_ids` are the chats searched (the caller decides them with a `ScopePolicy`; one chat unless
    config allows more). `person_ids` keeps only memories spoken by, mentioning or involving those
    people; `time_range` keeps only memories inside it; `topic` keeps only memories matching the topic
    words. `now` is the question's time, for relative time expressions and recency.
    """

    text: str
    chat_ids: tuple[int, ...]
    now: datetime
    person_ids: tuple[int, ...] = ()
    time_range: TimeRange | None = None
    topic: str | None = None
    limit: int = 10


@dataclass(slots=True)
class RecallHit:
    """One recalled memory: a raw message or a ChatHistory row, with its final score.

    `text` is what is shown (a message, or a ChatHistory summary); `signals` records each step's
    factor (for admins and tuning); `found_by` names the candidate lists that found it, with its rank
    (from 1) in each (empty for a turn that only borrowed a neighbour's score); `duplicates` are the
    ids of other rows with the same content that were merged into this one and reinforced it.
    `time` is when the memory was said, for a ChatHistory row when its topic ended (`started`: began).
    """

    kind: HitKind
    id: int
    chat_id: int
    text: str
    speaker: str
    time: datetime
    score: float
    person_id: int | None = None
    mentions: tuple[str, ...] = ()
    theme: str = ""
    participants: tuple[int, ...] = ()
    count: int = 0
    source_message_ids: tuple[int, ...] = ()
    document: str = ""
    duplicates: list[int] = field(default_factory=list)
    signals: dict[str, float] = field(default_factory=dict)
    found_by: dict[str, int] = field(default_factory=dict)
    started: datetime | None = None
    is_bot: bool = False  # a message the bot itself sent
    forwarded: bool = False  # a message re-sharing words written elsewhere

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, self.id)

    @property
    def matched_text(self) -> str:
        """The text signals look at: the message, or a ChatHistory row's theme, summary and keywords."""
        return self.document or self.text
