"""How often something may happen per key (a member's chat commands, a client's failed logins): at
most `limit` events in any `window` seconds, a rolling window, kept in bounded memory.

The rule is read at every call, so a config reload changes it at once; the clock is injectable
(seconds, monotonic by default) so that tests move it by hand instead of sleeping.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

MAX_KEYS = 10_000
"""The most keys remembered: past it the key with the oldest latest event is dropped (forgetting it
early only gives that key room again), so a flood of new keys within one window is bounded too."""


@dataclass(frozen=True, slots=True)
class Rule:
    """At most `limit` events in any `window` seconds; a `limit` of 0 means no limit."""

    limit: int
    window: float


@dataclass(frozen=True, slots=True)
class Verdict:
    """`wait`: seconds until the key may have another event (0: it may now). `first`: no refusal was
    told (`RateLimit.told`) since the key last had room: this one is worth telling or logging."""

    wait: float = 0.0
    first: bool = False

    @property
    def allowed(self) -> bool:
        return self.wait <= 0.0

    @property
    def wait_seconds(self) -> int:
        """`wait` in whole seconds, rounded up (asking again any sooner would be refused)."""
        return math.ceil(max(self.wait, 0.0))


@dataclass(slots=True)
class _Events:
    times: deque[float] = field(default_factory=deque)  # at most `limit`, oldest first
    refused: bool = False  # a refusal told since the key last had room


class RateLimit:
    """Events counted per key against `rule()`, on `clock` (seconds). A key is dropped once its
    latest event is older than the window, so what is kept is the keys active within one window, at
    most `max_keys` of them."""

    def __init__(
        self, rule: Callable[[], Rule], clock: Callable[[], float] = time.monotonic, max_keys: int = MAX_KEYS
    ) -> None:
        self.rule = rule
        self.clock = clock
        self.max_keys = max_keys
        self._keys: OrderedDict[Hashable, _Events] = OrderedDict()  # in the order of their latest event

    def __len__(self) -> int:
        """How many keys are remembered."""
        return len(self._keys)

    def check(self, key: Hashable) -> Verdict:
        """Whether `key` may have another event now (nothing is counted: `add` does that)."""
        rule, now = self.rule(), self.clock()
        if rule.limit <= 0:
            return Verdict()
        self._drop_expired(now, rule.window)
        events = self._keys.get(key)
        if events is None:
            return Verdict()
        while events.times and events.times[0] <= now - rule.window:
            events.times.popleft()
        if len(events.times) < rule.limit:
            events.refused = False
            return Verdict()
        # room comes when the `limit`-th latest event leaves the window (the limit may have been lowered)
        return Verdict(events.times[-rule.limit] + rule.window - now, not events.refused)

    def told(self, key: Hashable) -> None:
        """The refusal of `key` was told (a note sent, a line logged): until it has room again, its
        verdicts are no longer `first`. Marked apart from `check`, so that a refusal whose telling
        failed midway (and is tried again) is still the first."""
        if (events := self._keys.get(key)) is not None:
            events.refused = True

    def add(self, key: Hashable) -> None:
        """Count an event of `key` now (none while there is no limit)."""
        rule, now = self.rule(), self.clock()
        if rule.limit <= 0:
            return
        events = self._keys.pop(key, None) or _Events()
        events.times.append(now)
        while len(events.times) > rule.limit:
            events.times.popleft()
        self._keys[key] = events
        self._drop_expired(now, rule.window)
        while len(self._keys) > self.max_keys:
            self._keys.popitem(last=False)

    def reset(self, key: Hashable) -> None:
        """Forget `key`'s events: it has room again."""
        self._keys.pop(key, None)

    def _drop_expired(self, now: float, window: float) -> None:
        while self._keys:
            key, events = next(iter(self._keys.items()))
            if events.times and events.times[-1] > now - window:
                return
            del self._keys[key]
