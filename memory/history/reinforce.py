"""Recall reinforces: a ChatHistory row used in a reply context or shown by /recall counts once more."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import ChatHistory
from memory.storage.sql import rows_changed


async def reinforce(session: AsyncSession, ids: Iterable[int], by: int = 1) -> int:
    """Add `by` to `count` of each ChatHistory row in `ids` (each id once); returns rows changed.

    Call it inside a write transaction. Rows deleted meanwhile are skipped silently.
    """
    unique = sorted({int(i) for i in ids})
    if not unique or by == 0:
        return 0
    result = await session.execute(
        update(ChatHistory).where(ChatHistory.id.in_(unique)).values(count=ChatHistory.count + by)
    )
    return rows_changed(result)
