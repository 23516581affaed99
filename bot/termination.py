"""SIGTERM for the commands that stop on Ctrl-C (every one but `qunyi run`, `web` and `mcp`, which stop
on either by themselves): the command stops as Ctrl-C stops it, its cleanup run (the app closed, the LLM
usage it holds written, its hold on the data directory let go), but ends as a terminated one, with
status 143 (128 + SIGTERM) and a line saying so, where Ctrl-C ends with 130."""

from __future__ import annotations

import signal
import threading
from types import FrameType

TERMINATED = 128 + signal.SIGTERM
"""The exit code of a command stopped by SIGTERM (143), as a shell gives a program SIGTERM ended."""

_received = threading.Event()


def terminate_as_interrupt() -> None:
    """From now on a SIGTERM stops the process as a Ctrl-C does, and `terminated` says it came."""
    signal.signal(signal.SIGTERM, on_sigterm)


def on_sigterm(signum: int = signal.SIGTERM, frame: FrameType | None = None) -> None:
    """The SIGTERM handler (also one an event loop calls with no arguments): noted, then Ctrl-C's
    SIGINT raised, which interrupts the command or cancels the task `asyncio.run` runs."""
    _received.set()
    signal.raise_signal(signal.SIGINT)


def terminated() -> bool:
    """Whether a SIGTERM came (through `on_sigterm`): a KeyboardInterrupt is then its doing."""
    return _received.is_set()
