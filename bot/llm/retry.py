"""When to retry an LLM request and how long to wait: exponential backoff with jitter, Retry-After."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    """429 (rate limit), request timeouts/conflicts and every 5xx; other 4xx are the caller's fault."""
    return status in RETRYABLE_STATUS or status >= 500


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The server's requested wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_delay(
    attempt: int,
    base: float,
    cap: float,
    retry_after: float | None,
    random: Callable[[], float],
) -> float:
    """Seconds to wait before retry number `attempt + 1`.

    A server's Retry-After wins (capped); otherwise base·2^attempt scaled by a jitter factor in
    [0.5, 1.5) so that many clients that failed together do not retry together.
    """
    if retry_after is not None:
        return min(retry_after, cap)
    return min(base * (2**attempt) * (0.5 + random()), cap)
