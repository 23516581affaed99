"""Retry policy: which statuses retry, Retry-After parsing, backoff growth, jitter and cap."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.llm.retry import backoff_delay, is_retryable_status, retry_after_seconds


@pytest.mark.parametrize(
    ("status", "retry"),
    [(429, True), (500, True), (503, True), (400, False), (401, False), (404, False), (422, False)],
)
def test_retryable_statuses(status: int, retry: bool) -> None:
    assert is_retryable_status(status) is retry


def test_retry_after_forms() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"Retry-After": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "150", "Retry-After": "9"}) == 0.15
    assert retry_after_seconds({"Retry-After": "Wed, 01 Jan 2025 12:00:30 GMT"}, now) == 30.0
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_grows_exponentially_with_bounded_jitter_and_cap() -> None:
    assert backoff_delay(0, 1.0, 30.0, None, lambda: 0.5) == 1.0
    assert backoff_delay(3, 1.0, 30.0, None, lambda: 0.5) == 8.0
    assert backoff_delay(2, 1.0, 30.0, None, lambda: 0.0) == 2.0
    assert backoff_delay(2, 1.0, 30.0, None, lambda: 0.999) == pytest.approx(5.996)
    assert backoff_delay(10, 1.0, 30.0, None, lambda: 0.5) == 30.0
    assert backoff_delay(0, 1.0, 30.0, 7.0, lambda: 0.5) == 7.0
    assert backoff_delay(0, 1.0, 30.0, 120.0, lambda: 0.5) == 30.0
