"""The check a per-chat job makes in its write transaction after it read a batch and waited (on the
model, on offline work): whether what it read may still be written on. Another run may have moved its
cursor (a second process: `qunyi import` catching up while the bot runs), a chat merge may have
changed the chat (memory.chat_marks), or a message it read may have been deleted (a platform's 撤回,
a forget); the job then writes nothing and reads the batch again at a later run."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from memory.chat_marks import merged_since
from memory.messages import missing_ids
from memory.models import JobState

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BatchStart:
    """What a job read a chat's batch against: its cursor there and the chat's merge mark."""

    job: str
    chat_id: int
    cursor: int
    mark: int | None


async def batch_outdated(session: AsyncSession, start: BatchStart, read: Iterable[int]) -> bool:
    """True (logged) when the batch read from `start`, with messages `read`, may no longer be written."""
    if await merged_since(session, start.chat_id, start.mark, start.job):
        return True
    state = await session.get(JobState, (start.job, start.chat_id))
    if (state.cursor if state else 0) != start.cursor:
        log.info("%s of chat %s: another run moved on meanwhile; batch skipped", start.job, start.chat_id)
        return True
    if await missing_ids(session, read):
        log.info(
            "%s of chat %s: a message it read was deleted meanwhile; left for later", start.job, start.chat_id
        )
        return True
    return False
