"""Recalling a ChatHistory row reinforces it: its `count` rises (forgetting spares what is used)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import ChatHistory


async def reinforce_history(session: AsyncSession, ids: Iterable[int]) -> int:
    """Add one to `count` of each ChatHistory row in `ids` (each at most once); returns rows changed."""
    wanted = sorted(set(ids))
    if not wanted:
        return 0
    result = await session.execute(
        update(ChatHistory).where(ChatHistory.id.in_(wanted)).values(count=ChatHistory.count + 1)
    )
    return int(result.rowcount or 0)
