"""What a job is: a name, an interval read at each scheduling, and a coroutine run with the time."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A periodic job. `interval` is called whenever the job is (re)scheduled, so a config reload
    changes the cadence of a running job; `run` receives the current (possibly simulated) time."""

    name: str
    interval: Callable[[], timedelta]
    run: Callable[[datetime], Coroutine[Any, Any, object]]
