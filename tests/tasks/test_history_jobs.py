"""The topic-check and forgetting jobs on the runner, in simulated time, and their switches."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from bot.config import Settings
from bot.history_setup import register_history_jobs
from memory.clock import ManualClock
from memory.forgetting import ForgetPolicy
from memory.models import ChatHistory, ForgetLogEntry, LlmUsage, Message, TopicCacheEntry
from memory.service import MemoryService
from memory.topics.cache import PackRules
from memory.topics.check import TopicCheck, TopicCheckSettings
from tasks import JobRunner
from tasks.forgetting import forgetting_job
from tasks.topic_check import topic_check_job
from tests.conftest import make_message


async def test_jobs_turn_messages_into_history_and_forget_it_in_simulated_time(
    memory: MemoryService, clock: ManualClock
) -> None:
    settings = TopicCheckSettings(batch_size=4, pack=PackRules(idle_checks=1, max_fragments=5))
    enabled = {"topics": True, "forget": True}
    runner = JobRunner(clock)
    check = TopicCheck(memory.db, settings)
    runner.register(topic_check_job(check, lambda: timedelta(minutes=5), lambda: enabled["topics"]))
    policy = (ForgetPolicy(small_cohort="round_up"), "global")
    runner.register(
        forgetting_job(memory.db, lambda: policy if enabled["forget"] else None, lambda: timedelta(minutes=5))
    )
    hike = [
        make_message(n, text=t) for n, t in enumerate(["周末去九溪爬山", "九溪十八涧", "龙井村", "满觉陇"], 1)
    ]
    gift = [make_message(n, sender="u2", text="Tom 生日礼物 拍立得") for n in range(100, 104)]
    await memory.record_many([*hike, *gift])
    clock.advance(timedelta(hours=2))
    await runner.run_due(clock.now())  # first sighting schedules the jobs
    enabled["forget"] = False
    clock.advance(timedelta(hours=1))
    await runner.run_due(clock.now())
    async with memory.db.read() as session:
        rows = (await session.scalars(select(ChatHistory))).all()
        assert len(rows) >= 1, "the first batch's topic was packed after one idle check"
        assert (await session.execute(select(func.count(TopicCacheEntry.id)))).scalar_one() >= 1
    enabled["topics"] = False
    enabled["forget"] = True
    clock.advance(timedelta(hours=1))
    await runner.run_due(clock.now())
    assert runner.failures == {"topic_check": 0, "forgetting": 0}
    async with memory.db.read() as session:
        # round_up: the single 1-hour-old row (cohort of one) is deleted at stage 1.
        assert (await session.execute(select(func.count(ChatHistory.id)))).scalar_one() < len(rows)
        assert (await session.execute(select(func.count(Message.id)))).scalar_one() == 8


async def test_the_forgetting_turn_prunes_expired_bookkeeping_even_with_forgetting_off(
    memory: MemoryService, clock: ManualClock
) -> None:
    """`[retention]` from the settings reaches the registered job: 0 days keeps the forgetting log."""
    settings = Settings.model_validate({"retention": {"llm_usage_days": 30, "forget_log_days": 0}})
    runner = JobRunner(clock)
    register_history_jobs(runner, memory.db, lambda: settings, None)
    old, recent = (clock.now() - timedelta(days=age) for age in (31, 29))
    async with memory.db.write() as session:
        for when in (old, recent):
            session.add(LlmUsage(task="reply", time=when.timestamp()))
            session.add(ForgetLogEntry(chat_history_id=1, chat_id=1, theme="t", stage=1, count=0, time=0.0))
    assert await runner.run_job("forgetting")
    assert runner.failures["forgetting"] == 0
    async with memory.db.read() as session:
        assert (await session.scalars(select(LlmUsage.time))).all() == [recent.timestamp()]
        assert (await session.execute(select(func.count(ForgetLogEntry.id)))).scalar_one() == 2
