"""How often and when something about a person was seen, and how two records of it fold into one."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Sightings:
    """A count with the first and last time (POSIX seconds) it was seen: an alias's, a membership's."""

    count: int
    first_seen: float
    last_seen: float

    def folded(self, other: Sightings) -> Sightings:
        """One record of what both saw: the counts add up, the earliest first and the latest last
        sighting stay."""
        first = min(self.first_seen, other.first_seen)
        return Sightings(self.count + other.count, first, max(self.last_seen, other.last_seen))

    def values(self) -> tuple[int, float, float]:
        """(count, first seen, last seen)."""
        return self.count, self.first_seen, self.last_seen
