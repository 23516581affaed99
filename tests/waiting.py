"""Waiting in tests for what will happen, by polling under a deadline only a broken product uses up.

A fixed sleep is either too short on a loaded machine (the test fails although nothing is wrong) or
longer than needed everywhere else; a poll returns as soon as the condition holds and fails, naming what
never happened, only after WAIT seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

# Seconds before a wait gives up: generous, since only a failure uses them up and CI machines are shared.
WAIT = 60.0


def wait_until(holds: Callable[[], bool], what: str, seconds: float = WAIT, every: float = 0.05) -> None:
    """Return once `holds()` is true; fail with "`what` never happened" after `seconds` seconds."""
    deadline = time.monotonic() + seconds
    while not holds():
        assert time.monotonic() < deadline, f"{what}: never happened in {seconds:g} s"
        time.sleep(every)


async def eventually(
    holds: Callable[[], bool], what: str, seconds: float = WAIT, every: float = 0.01
) -> None:
    """`wait_until` for a coroutine: the event loop runs on while `holds()` is false."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not holds():
        assert loop.time() < deadline, f"{what}: never happened in {seconds:g} s"
        await asyncio.sleep(every)
