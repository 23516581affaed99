"""Guessing the console's token: after FAILED_TOKENS wrong tokens from one client address within
WINDOW_SECONDS, every request from that address is refused (429, with Retry-After) until the window has
room, its token not even checked. A wrong `?token=` or `Authorization` header counts; a stale session
cookie (the token changed) does not: it is derived from the token, not guessed. A request that gets in
clears its address's count.

The address is the peer's: behind a reverse proxy every client is the proxy's address, and a header
such as X-Forwarded-For, which any client can write, is not trusted instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from aiohttp import web

from bot.rate_limit import RateLimit, Rule, Verdict

log = logging.getLogger(__name__)

FAILED_TOKENS = 10
WINDOW_SECONDS = 300.0
RULE = Rule(FAILED_TOKENS, WINDOW_SECONDS)


def login_throttle(clock: Callable[[], float] = time.monotonic) -> RateLimit:
    """The failed tokens counted per client address, on `clock` (seconds)."""
    return RateLimit(lambda: RULE, clock)


def client_address(request: web.Request) -> str:
    """The address a request came from ("" when the transport has none, a Unix socket)."""
    return request.remote or ""


def throttled_message(throttle: RateLimit, address: str, verdict: Verdict) -> str:
    """What a refused address is told; the first refusal of a spell is logged."""
    if verdict.first:
        log.warning(
            "%s sent %d wrong console tokens within %g s: its requests are refused for %d s",
            address or "a client",
            FAILED_TOKENS,
            WINDOW_SECONDS,
            verdict.wait_seconds,
        )
        throttle.told(address)
    return f"too many wrong tokens from this address: try again in {verdict.wait_seconds} s"
