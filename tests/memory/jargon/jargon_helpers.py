"""Shared helpers for the jargon dictionary tests: record messages, mine candidates into the DB."""

from __future__ import annotations

from memory.jargon import dictionary
from memory.jargon.types import Candidate
from memory.service import MemoryService
from tests.conftest import make_message

NOW = 1_770_000_000.0


async def record(
    memory: MemoryService, start: int, texts: list[str], chat: str = "g1", **extra: object
) -> list[int]:
    """Record `texts` as messages n=start.. of `chat`; returns their database ids."""
    report = await memory.record_many(
        make_message(start + i, chat=chat, sender=f"u{i % 3}", text=t, **extra) for i, t in enumerate(texts)
    )
    assert report.created == len(texts)
    chat_ref = await memory.chat("test", chat)
    assert chat_ref is not None
    recent = await memory.recent(chat_ref.id, len(texts))
    return [m.id for m in recent]


async def mine(
    memory: MemoryService, chat_id: int, term: str, message_ids: list[int], scope: dictionary.Scope = "global"
) -> int:
    """Upsert one candidate with the given evidence; returns the entry id."""
    async with memory.db.write() as session:
        touched = await dictionary.upsert_mined(
            session, chat_id, scope, [Candidate(term, tuple(map(str, message_ids)), 1.0)], NOW
        )
    return touched[0]
