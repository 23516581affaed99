"""The embedding backfill daemon: every interval, embed a bounded batch of rows that lack a vector."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from memory.embeddings.backfill import BackfillReport, backfill
from memory.ports import Embedder
from memory.storage import Database
from tasks.registry import JobSpec

JOB_NAME = "embedding_backfill"


def embedding_backfill_job(
    db: Database, embedder: Embedder, interval: Callable[[], timedelta], batch_size: Callable[[], int]
) -> JobSpec:
    """A job embedding up to `batch_size()` messages and topics per run (idempotent, resumable)."""

    async def run(now: datetime) -> BackfillReport:
        return await backfill(db, embedder, batch_size(), now.timestamp())

    return JobSpec(JOB_NAME, interval, run)
