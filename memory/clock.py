"""Time sources: the wall clock, and a manual clock that tests and replays move by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol

WRONG_CLOCK_MARGIN = timedelta(days=1)
"""A time more than this past the wall clock came from a wrong clock (messages dated up to the year 9000
are accepted): it is stored as it came, but trusted as the newest time of nothing."""


def from_wrong_clock(when: datetime) -> bool:
    """Whether `when` (timezone-aware) is more than WRONG_CLOCK_MARGIN past the wall clock."""
    return when > datetime.now(UTC) + WRONG_CLOCK_MARGIN


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware."""
        ...


class SystemClock:
    """The real time in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that only moves when told to; used for simulated time."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start time")
        self._now = start

    def now(self) -> datetime:
        return self._now

    def set(self, when: datetime) -> None:
        if when.tzinfo is None:
            raise ValueError("ManualClock needs timezone-aware times")
        if when > self._now:
            self._now = when

    def advance(self, delta: timedelta) -> None:
        self._now += delta
