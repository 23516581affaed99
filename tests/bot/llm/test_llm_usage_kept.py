"""Usage the ledger would have lost: a request cancelled while its answer was awaited, and rows a locked
database refused. Real gateway, fake OpenAI-compatible server on loopback, real SQLite."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.llm.gateway import _estimate_prompt
from bot.llm.settings import Budget
from bot.llm.usage import CANCELLED, UsageLedger
from memory.clock import ManualClock
from memory.models import LlmUsage
from memory.storage.database import Database
from tests.conftest import database_locked
from tests.fakes.gateway import fake_gateway
from tests.fakes.openai_server import Answer, FakeOpenAI, Hold

ASK = [{"role": "user", "content": "今天群里聊了什么？ What did the group talk about?"}]


@pytest.fixture
async def quick_db(tmp_path: Path) -> AsyncIterator[Database]:
    """A database that gives up on a lock after 100 ms, so a locked write fails fast."""
    database = await Database.open(tmp_path / "quick", busy_timeout_ms=100)
    yield database
    await database.close()


async def rows(db: Database) -> list[LlmUsage]:
    async with db.read() as session:
        return list((await session.execute(select(LlmUsage).order_by(LlmUsage.id))).scalars())


async def test_a_request_cancelled_while_awaited_is_recorded_as_cancelled_with_its_prompt(
    fake_llm: FakeOpenAI, db: Database, clock: ManualClock
) -> None:
    held = Hold(Answer("太晚了"))
    fake_llm.script(held, Answer("好", usage=(30, 2)))
    gateway = fake_gateway(fake_llm, db, clock, "reply", tokens_per_hour=10_000)
    waiting = asyncio.create_task(gateway.complete_text("reply", ASK))
    await asyncio.wait_for(held.reached.wait(), 60)  # the server holds the answer until cancelled
    assert len(fake_llm.chat_requests) == 1 and not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    prompt = _estimate_prompt(ASK, None)
    assert prompt > 0
    assert await gateway.ledger.used("reply", clock.now() - timedelta(hours=1)) == prompt  # held, counted
    assert await gateway.complete_text("reply", ASK) == "好"
    cancelled, answered = await rows(db)  # written with the next row
    assert (cancelled.task, cancelled.prompt_tokens, cancelled.completion_tokens) == ("reply", prompt, 0)
    assert cancelled.cancelled and not cancelled.ok and cancelled.error == CANCELLED
    assert (answered.prompt_tokens, answered.cancelled, answered.ok) == (30, False, True)
    summary = (await gateway.ledger.summary())["reply"]
    assert (summary["calls"], summary["failures"], summary["cancelled"]) == (2, 1, 1)
    await gateway.close()


async def test_a_timeout_around_the_request_leaves_a_cancelled_row_written_at_close(
    fake_llm: FakeOpenAI, db: Database, clock: ManualClock
) -> None:
    """The rerank's wait_for cancels the request on its timeout: closing writes what was held. The timeout
    here runs out once the request is at the server, however long the machine took to send it."""
    held = Hold(Answer("太晚了"))
    fake_llm.script(held)
    gateway = fake_gateway(fake_llm, db, clock, "reply")

    async def run_out_when_held(limit: asyncio.Timeout) -> None:
        await held.reached.wait()
        limit.reschedule(asyncio.get_running_loop().time())

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(60) as limit:
            running_out = asyncio.create_task(run_out_when_held(limit))
            await gateway.complete_text("reply", ASK)
    await running_out
    assert await rows(db) == []
    await gateway.close()
    [row] = await rows(db)
    assert row.cancelled and row.prompt_tokens == _estimate_prompt(ASK, None)


async def test_a_locked_database_keeps_the_usage_and_the_answer_still_comes(
    fake_llm: FakeOpenAI, quick_db: Database, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.script(Answer("一", usage=(40, 10)), Answer("二", usage=(7, 3)), Answer("三", usage=(1, 1)))
    gateway = fake_gateway(fake_llm, quick_db, clock, "reply", tokens_per_hour=55)
    with database_locked(quick_db.path), caplog.at_level(logging.WARNING, "bot.llm.usage"):
        assert await gateway.complete_text("reply", ASK) == "一"
        assert await gateway.ledger.used("reply", clock.now() - timedelta(hours=1)) == 50
        assert await gateway.complete_text("reply", ASK) == "二"
        # 60 held tokens are over the cap of 55: the budget sees what the database has not taken yet
        assert gateway.unavailable_reason("reply") == "over budget: reply: 60 tokens in the last hour, cap 55"
    assert (
        "LLM usage kept in " in caplog.text
        and "llm_usage_held.jsonl until the database takes it" in caplog.text
    )
    assert await rows(quick_db) == []
    assert (await gateway.ledger.summary())["reply"]["calls"] == 2
    await gateway.close()
    assert [(r.prompt_tokens, r.completion_tokens, r.ok) for r in await rows(quick_db)] == [
        (40, 10, True),
        (7, 3, True),
    ]


async def test_held_rows_go_with_the_next_write_that_gets_through_once_each(
    fake_llm: FakeOpenAI, quick_db: Database, clock: ManualClock
) -> None:
    fake_llm.script(Answer("一", usage=(40, 10)), Answer("二", usage=(7, 3)))
    gateway = fake_gateway(fake_llm, quick_db, clock, "reply")
    with database_locked(quick_db.path):
        await gateway.complete_text("reply", ASK)
    await gateway.complete_text("reply", ASK)
    assert [r.prompt_tokens for r in await rows(quick_db)] == [40, 7]
    await gateway.close()
    assert [r.prompt_tokens for r in await rows(quick_db)] == [40, 7]
    assert await gateway.ledger.used("reply", clock.now() - timedelta(hours=1)) == 60


async def test_rows_being_written_while_the_database_waits_on_a_lock_still_count(
    tmp_path: Path, clock: ManualClock
) -> None:
    """A write waits up to the busy timeout for a lock: meanwhile the rows it carries are neither held
    nor in the database, yet the budget and the summary must still count them."""
    slow = await Database.open(tmp_path / "slow", busy_timeout_ms=60_000)  # waits until cancelled
    ledger = UsageLedger(slow, clock, {"reply": Budget(tokens_per_hour=1000)})
    since = clock.now() - timedelta(hours=1)
    with database_locked(slow.path):
        ledger.keep("reply", "m", 900, 200, ok=True)
        writing = asyncio.create_task(ledger.flush())
        # One loop turn runs the flush's first step: the rows go to the write, which then waits on the
        # lock until cancelled (a sleep might end before the flush had begun, the rows still held).
        await asyncio.sleep(0)
        assert not writing.done()
        assert await ledger.used("reply", since) == 1100
        assert await ledger.over_budget("reply") == "reply: 1,100 tokens in the last hour, cap 1,000"
        assert (await ledger.summary())["reply"]["calls"] == 1
        writing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await writing
    assert await ledger.used("reply", since) == 1100  # held again after the cancelled write
    await ledger.close()
    assert [r.prompt_tokens for r in await rows(slow)] == [900]
    assert await ledger.used("reply", since) == 1100  # written, counted once
    await slow.close()
