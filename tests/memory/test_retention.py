"""Retention of bookkeeping rows: expired LLM usage and forgetting-log rows go, a bounded batch per
run and oldest first; memory and recent rows stay."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from memory.models import ForgetLogEntry, LlmUsage, Message
from memory.retention import RetentionPolicy, prune_bookkeeping
from memory.service import MemoryService
from tests.conftest import T0, make_message


async def _seed(memory: MemoryService, ages_days: list[float]) -> None:
    async with memory.db.write() as session:
        for n, age in enumerate(ages_days):
            when = (T0 - timedelta(days=age)).timestamp()
            session.add(LlmUsage(task="reply", model="m", prompt_tokens=n, completion_tokens=0, time=when))
            session.add(
                ForgetLogEntry(chat_history_id=n, chat_id=1, theme=f"t{n}", stage=1, count=0, time=when)
            )


async def _left(memory: MemoryService) -> tuple[list[int], list[int]]:
    async with memory.db.read() as session:
        usage = (await session.scalars(select(LlmUsage.prompt_tokens).order_by(LlmUsage.id))).all()
        log = (
            await session.scalars(select(ForgetLogEntry.chat_history_id).order_by(ForgetLogEntry.id))
        ).all()
    return list(usage), list(log)


async def test_expired_rows_go_a_batch_at_a_time_oldest_first(memory: MemoryService) -> None:
    await _seed(memory, [400, 300, 200, 40, 1, 0])
    policy = RetentionPolicy({"llm_usage": timedelta(days=30), "forget_log": timedelta(days=250)}, batch=2)

    assert await prune_bookkeeping(memory.db, T0, policy) == {"llm_usage": 2, "forget_log": 2}
    assert await _left(memory) == ([2, 3, 4, 5], [2, 3, 4, 5])

    assert await prune_bookkeeping(memory.db, T0, policy) == {"llm_usage": 2, "forget_log": 0}
    assert await _left(memory) == ([4, 5], [2, 3, 4, 5])


async def test_a_table_kept_forever_and_memory_are_not_touched(memory: MemoryService) -> None:
    await memory.record_many([make_message(1, time=T0 - timedelta(days=900))])
    await _seed(memory, [900, 0])
    policy = RetentionPolicy({"llm_usage": None, "forget_log": timedelta(days=1)})

    assert await prune_bookkeeping(memory.db, T0, policy) == {"forget_log": 1}
    assert await _left(memory) == ([0, 1], [1])
    async with memory.db.read() as session:
        assert (await session.execute(select(func.count(Message.id)))).scalar_one() == 1
