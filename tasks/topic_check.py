"""The topic-check job: every chat's new messages → cached topics → ChatHistory (memory.topics.check)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from memory.topics.check import CheckReport, TopicCheck
from tasks.registry import JobSpec

NAME = "topic_check"


def topic_check_job(
    check: TopicCheck, interval: Callable[[], timedelta], enabled: Callable[[], bool]
) -> JobSpec:
    """A JobSpec running `check` over all chats at each turn (a no-op while `enabled()` is false).

    The check is idempotent and resumable: per-chat cursors and disentangler state live in job_state,
    and each batch commits with its cursor."""

    async def run(now: datetime) -> list[CheckReport]:
        if not enabled():
            return []
        return await check.run(now)

    return JobSpec(NAME, interval, run)
