"""A SIGTERM that reaches `qunyi run` while it is still starting (loading its modules, opening the
database), before the event loop's stop handling is installed: noted, so the bot stops as usual once
it can, instead of dying at once with status 143 and no word."""

from __future__ import annotations

import signal
import threading
from types import FrameType

_received = threading.Event()


def note_sigterm() -> None:
    """From now on, a SIGTERM is noted (`sigterm_noted`) instead of ending the process. Only for a
    process whose later stop handling asks `sigterm_noted` (`qunyi run`): anywhere else the signal
    would be ignored."""
    signal.signal(signal.SIGTERM, _note)


def sigterm_noted() -> bool:
    """Whether a SIGTERM came since `note_sigterm`."""
    return _received.is_set()


def _note(signum: int, frame: FrameType | None) -> None:
    _received.set()
