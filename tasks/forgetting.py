"""The forgetting job: one four-stage pass over ChatHistory per turn (memory.forgetting)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from memory.forgetting import ForgetPolicy, ForgetReport, Scope, forget_pass
from memory.storage import Database
from tasks.registry import JobSpec

NAME = "forgetting"


def forgetting_job(
    db: Database,
    policy: Callable[[], tuple[ForgetPolicy, Scope] | None],
    interval: Callable[[], timedelta],
) -> JobSpec:
    """A JobSpec running one pass per turn with the policy in force (`policy()` None disables it).

    A pass is one transaction: a crash leaves every row at its previous stage."""

    async def run(now: datetime) -> ForgetReport | None:
        current = policy()
        if current is None:
            return None
        forget_policy, scope = current
        return await forget_pass(db, now, forget_policy, scope)

    return JobSpec(NAME, interval, run)
