"""Deleting the stored vectors of one model (an admin's choice: `qunyi embeddings prune`).

The vectors go a chat at a time in short write transactions of at most `PRUNE_BATCH` rows, each
picked through the (chat_id, model, dimension, created_at) index, so a running bot's writes wait
milliseconds, never the whole prune. Only the vectors there were when the prune was planned go: one
written or rewritten since (a bot still embedding with that model) is left, and counted as kept.
A bot's cached vectors notice the rows gone at its next search (`VectorIndex` checks each chat's
count, newest id and write time)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.embeddings.stored_models import StoredModel, stored_models
from memory.embeddings.vectors import VALUE_BYTES
from memory.models import EmbeddingVector
from memory.storage import Database
from memory.storage.sql import json_values

PRUNE_BATCH = 2000


@dataclass(slots=True)
class Pruned:
    """Vectors deleted so far, and the bytes they took."""

    vectors: int = 0
    bytes: int = 0


async def prune_batches(
    db: Database, planned: StoredModel, batch: int = PRUNE_BATCH
) -> AsyncIterator[Pruned]:
    """Delete the vectors `planned` (from `stored_models`) describes, one transaction a batch; yields
    what each batch deleted."""
    for chat_id in planned.chat_ids:
        while True:
            async with db.write() as session:
                done = await _delete_batch(session, planned, chat_id, batch)
            if done.vectors:
                yield done
            if done.vectors < batch:
                break


async def _delete_batch(session: AsyncSession, planned: StoredModel, chat_id: int, batch: int) -> Pruned:
    rows = (
        await session.execute(
            select(EmbeddingVector.id, EmbeddingVector.dimension)
            .where(
                EmbeddingVector.chat_id == chat_id,
                EmbeddingVector.model == planned.model,
                EmbeddingVector.created_at <= planned.newest_time,
                EmbeddingVector.id <= planned.newest_id,
            )
            .limit(batch)
        )
    ).all()
    if rows:
        await session.execute(
            delete(EmbeddingVector).where(EmbeddingVector.id.in_(json_values([r.id for r in rows])))
        )
    return Pruned(len(rows), sum(r.dimension for r in rows) * VALUE_BYTES)


async def left_of(db: Database, model: str) -> int:
    """How many vectors of `model` are stored now."""
    async with db.read() as session:
        return sum(found.vectors for found in await stored_models(session, model))
