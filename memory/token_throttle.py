"""Guessing the access token of a local HTTP server Qunyi runs (the admin console, the web playground):
after FAILED_TOKENS wrong tokens from one client address within WINDOW_SECONDS, that address is refused
(429, with Retry-After) until the window has room, its token not even checked. Each server says what a
wrong token is (a wrong `?token=` or `Authorization` header; not a missing one, nor a stale session
cookie, which is derived from the token, not guessed). A request that gets in clears its address's count.

The address is the peer's: behind a reverse proxy every client is the proxy's address, and a header
such as X-Forwarded-For, which any client can write, is not trusted instead.

Shared by `bot/web` and `adapters/playground` as `memory.local_access` is: the adapters may import only
`memory/`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from memory.rate_limit import MAX_KEYS, RateLimit, Rule

log = logging.getLogger(__name__)

FAILED_TOKENS = 10
WINDOW_SECONDS = 300.0
RULE = Rule(FAILED_TOKENS, WINDOW_SECONDS)


@dataclass(frozen=True, slots=True)
class Refusal:
    """What a refused address is answered: a 429 with `message` and `headers` (Retry-After)."""

    message: str
    retry_after: int  # whole seconds

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class TokenThrottle:
    """The wrong tokens sent to `server` (its name in the log: "console", "playground"), counted per
    client address (None or "": a transport without one, a Unix socket) on `clock` (seconds), for at
    most `max_keys` addresses."""

    def __init__(
        self, server: str, clock: Callable[[], float] = time.monotonic, max_keys: int = MAX_KEYS
    ) -> None:
        self.server = server
        self._wrong = RateLimit(lambda: RULE, clock, max_keys)

    def __len__(self) -> int:
        """How many addresses are remembered."""
        return len(self._wrong)

    def refusal(self, address: str | None) -> Refusal | None:
        """The refusal of `address` when it sent too many wrong tokens (the first of a spell is
        logged), else None: its token may be checked."""
        key = address or ""
        verdict = self._wrong.check(key)
        if verdict.allowed:
            return None
        if verdict.first:
            log.warning(
                "%s sent %d wrong %s tokens within %g s: its requests are refused for %d s",
                key or "a client",
                FAILED_TOKENS,
                self.server,
                WINDOW_SECONDS,
                verdict.wait_seconds,
            )
            self._wrong.told(key)
        return Refusal(
            f"too many wrong tokens from this address: try again in {verdict.wait_seconds} s",
            verdict.wait_seconds,
        )

    def wrong(self, address: str | None) -> None:
        """`address` sent a wrong token."""
        self._wrong.add(address or "")

    def passed(self, address: str | None) -> None:
        """`address` got in: its wrong tokens are forgotten."""
        self._wrong.reset(address or "")
