"""A doubling wait before asking a model again after a run it failed (down, timing out, refusing,
over budget): a job ticking every few seconds would otherwise ask a failing endpoint at every tick."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class FailurePause:
    """After a failed run, wait `first` seconds before the next, doubling at each failed run in a row
    up to `longest`; a run that did not fail ends the wait. A clock set back ends it too."""

    def __init__(self, what: str, longest: float) -> None:
        self.what = what
        self.longest = longest
        self._paused: tuple[float, float] | None = None  # (since, seconds)

    def waits(self, now: float) -> bool:
        """Whether the model is still not to be asked at `now`."""
        if self._paused is None:
            return False
        since, seconds = self._paused
        return 0 <= now - since < seconds

    def record(self, now: float, first: float, stopped: str | None) -> None:
        """Note how a run ended: `stopped` is why the model failed it, None when it did not."""
        if stopped is None:
            self._paused = None
            return
        seconds = min(self._paused[1] * 2 if self._paused else first, self.longest)
        self._paused = (now, seconds)
        log.info("%s stopped (%s); the model is asked again in %.0fs", self.what, stopped, seconds)
