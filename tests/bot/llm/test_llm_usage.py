"""Token accounting in the database and the rolling-window budget verdicts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from bot.llm.settings import Budget
from bot.llm.usage import UsageLedger
from memory.clock import ManualClock
from memory.models import LlmUsage
from memory.storage.database import Database

START = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)


async def test_used_counts_prompt_and_completion_in_a_rolling_window(db: Database) -> None:
    clock = ManualClock(START)
    ledger = UsageLedger(db, clock)
    await ledger.record("topic", "m", 100, 20, ok=True)
    clock.advance(timedelta(minutes=50))
    await ledger.record("topic", "m", 10, 5, ok=True)
    await ledger.record("jargon", "m", 1_000, 1_000, ok=True)
    assert await ledger.used("topic", clock.now() - timedelta(hours=1)) == 135
    clock.advance(timedelta(minutes=20))
    assert await ledger.used("topic", clock.now() - timedelta(hours=1)) == 15
    assert await ledger.used("topic", clock.now() - timedelta(days=1)) == 135


async def test_over_budget_names_the_task_tokens_window_and_cap(db: Database) -> None:
    clock = ManualClock(START)
    ledger = UsageLedger(db, clock, {"jargon": Budget(tokens_per_hour=200_000, tokens_per_day=300_000)})
    await ledger.record("jargon", "m", 150_000, 50_513, ok=True)
    assert await ledger.over_budget("jargon") == "jargon: 200,513 tokens in the last hour, cap 200,000"
    assert await ledger.over_budget("topic") is None  # no budget, no cap
    clock.advance(timedelta(hours=2))
    assert await ledger.over_budget("jargon") is None
    await ledger.record("jargon", "m", 100_000, 0, ok=True)
    assert await ledger.over_budget("jargon") == "jargon: 300,513 tokens in the last day, cap 300,000"
    clock.advance(timedelta(days=1, minutes=1))
    assert await ledger.over_budget("jargon") is None


async def test_summary_reports_every_budgeted_and_used_task(db: Database) -> None:
    clock = ManualClock(START)
    ledger = UsageLedger(db, clock, {"topic": Budget(tokens_per_hour=100), "summary": Budget()})
    await ledger.record("topic", "m", 80, 30, ok=True)
    await ledger.record("topic", "m", 0, 0, ok=False, error="HTTP 500: boom")
    clock.advance(timedelta(hours=3))
    await ledger.record("topic", "m", 5, 5, ok=True)
    await ledger.record("person", "m", 1, 2, ok=True)
    await ledger.record("person", "m", 0, 0, ok=False, error="HTTP 401: bad key")
    summary = await ledger.summary()
    assert list(summary) == ["person", "summary", "topic"]
    assert summary["topic"] == {
        "hour": 10,
        "day": 120,
        "calls": 3,
        "failures": 1,
        "cancelled": 0,
        "cap_hour": 100,
        "cap_day": None,
        "blocked_reason": None,
        "last_error": None,  # its last request was answered; the failure before it is no longer news
    }
    assert summary["summary"]["calls"] == 0
    assert summary["person"]["day"] == 3 and summary["person"]["last_error"] == "HTTP 401: bad key"


async def test_error_text_is_cut_to_fit_the_column(db: Database) -> None:
    ledger = UsageLedger(db, ManualClock(START))
    await ledger.record("reply", "m" * 300, 1, 1, ok=False, error="错" * 2_000)
    async with db.read() as session:
        row = (await session.execute(select(LlmUsage))).scalar_one()
    assert len(row.error) <= 500 and row.error.endswith("…")
    assert len(row.model) <= 128
