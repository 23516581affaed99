"""A MemoryService with hybrid recall attached, and helpers to build small hand-made corpora."""

from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from memory.clock import ManualClock
from memory.models import ChatHistory
from memory.recall import RecallQuery, RecallSettings, RecallWeights
from memory.recall.setup import attach_recall
from memory.service import MemoryService
from memory.storage import Database
from memory.storage.fts import index_rows


@pytest.fixture
def recall_memory(db: Database, clock: ManualClock) -> MemoryService:
    memory = MemoryService(db, clock)
    attach_recall(memory)
    return memory


def with_weights(memory: MemoryService, **weights: float) -> None:
    """Re-rank with some weights changed (the others at their defaults)."""
    memory.recaller.settings = RecallSettings(weights=RecallWeights(**weights))


async def ask(memory: MemoryService, chat_id: int, text: str, now: datetime, limit: int = 10) -> list[str]:
    hits = await memory.recall(RecallQuery(text, (chat_id,), now, limit=limit))
    return [hit.text for hit in hits]


async def add_history(
    session: AsyncSession,
    chat_id: int,
    theme: str,
    summary: str,
    start: datetime,
    end: datetime,
    sources: list[int],
    keywords: list[str] | None = None,
) -> int:
    """A ChatHistory row written directly (as the topic job would), indexed like the job does."""
    row = ChatHistory(
        chat_id=chat_id,
        theme=theme,
        keywords=keywords or [],
        summary=summary,
        key_points=[],
        original_text="",
        participants=[],
        start_time=start.timestamp(),
        end_time=end.timestamp(),
        source_message_ids=sources,
        count=0,
        forget_times=0,
        provenance="offline",
        created_at=end.timestamp(),
    )
    session.add(row)
    await session.flush()
    await index_rows(session, "chat_history_fts", [(row.id, f"{theme} {' '.join(keywords or [])} {summary}")])
    return row.id
