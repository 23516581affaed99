"""The forgetting job: one four-stage pass over ChatHistory per turn (memory.forgetting), and the
retention of bookkeeping rows (memory.retention) at the same turn."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from memory.forgetting import ForgetPolicy, ForgetReport, Scope, forget_pass
from memory.retention import RetentionPolicy, prune_bookkeeping
from memory.storage import Database
from tasks.registry import JobSpec

NAME = "forgetting"

log = logging.getLogger(__name__)


def forgetting_job(
    db: Database,
    policy: Callable[[], tuple[ForgetPolicy, Scope] | None],
    interval: Callable[[], timedelta],
    retention: Callable[[], RetentionPolicy] | None = None,
) -> JobSpec:
    """A JobSpec running one pass per turn with the policy in force (`policy()` None disables it).

    A pass is one transaction: a crash leaves every row at its previous stage. With `retention`, each
    turn first deletes a bounded batch of expired bookkeeping rows, whether forgetting is on or not."""

    async def run(now: datetime) -> ForgetReport | None:
        if retention is not None:
            pruned = await prune_bookkeeping(db, now, retention())
            if any(pruned.values()):
                log.info("retention pruned %s", ", ".join(f"{n} {t} rows" for t, n in pruned.items() if n))
        current = policy()
        if current is None:
            return None
        forget_policy, scope = current
        return await forget_pass(db, now, forget_policy, scope)

    return JobSpec(NAME, interval, run)
