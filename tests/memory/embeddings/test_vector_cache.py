"""Recall's cache of a chat's vectors at scale: checking it and bringing it up to date read the index
and the changed rows only, and it answers as a cache read afresh would, ties included."""

from __future__ import annotations

import re

from sqlalchemy import delete, update

from memory.embeddings import VectorIndex, save_vectors
from memory.models import EmbeddingVector
from memory.service import MemoryService
from tests.conftest import make_message
from tests.query_plans import planned

QUESTION = [1.0, 0.2, 0.0, 0.0]


async def test_a_changed_chat_reads_only_what_changed_and_ranks_as_a_fresh_load(
    memory: MemoryService,
) -> None:
    await memory.record_many([make_message(n) for n in range(1, 13)])
    rows = [(n, 1) for n in range(1, 11)]
    same = [1.0, 0.0, 0.0, 0.0]  # equal similarities: ties broken by row order
    async with memory.db.write() as session:
        await save_vectors(
            session, "message", "m", rows, [same if n % 2 else [0.0, 1.0, 0.0, 0.0] for n, _ in rows]
        )
    cached = VectorIndex()
    async with memory.db.read() as session:
        await cached.search(session, [1], "m", QUESTION, 6)
    async with memory.db.write() as session:
        await save_vectors(session, "message", "m", [(11, 1), (12, 1)], [same, [0.5, 0.5, 0.0, 0.0]])
        await save_vectors(session, "message", "m", [(2, 1)], [same])  # rewritten in place, same row id
        await session.execute(
            update(EmbeddingVector)
            .where(EmbeddingVector.ref_id.in_([2, 11, 12]))
            .values(created_at=EmbeddingVector.created_at + 1)
        )
        await session.execute(delete(EmbeddingVector).where(EmbeddingVector.ref_id == 5))
    with planned(memory.db) as plans:
        async with memory.db.read() as session:
            found = await cached.search(session, [1], "m", QUESTION, 8)
    async with memory.db.read() as session:
        fresh = await VectorIndex().search(session, [1], "m", QUESTION, 8)
    assert found == fresh
    assert ("message", 2) in [key for key, _ in found] and ("message", 5) not in [key for key, _ in found]
    whole = [
        (s, step.detail)
        for s, steps in plans
        for step in steps
        if re.match(r"(SCAN embeddings|SEARCH embeddings USING INDEX)", step.detail)
    ]
    assert whole == []
