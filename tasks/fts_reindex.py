"""The full-text re-index job: a database whose rows were indexed by an older tokenizer is indexed
again in the background, batch by batch, resuming from its cursor after a restart (memory.reindex).
Once done, each run is one read of the stamp."""

from __future__ import annotations

from datetime import datetime, timedelta

from memory.reindex import reindex
from memory.storage import Database
from memory.storage.fts import INDEX_JOB
from tasks.registry import JobSpec

JOB_NAME = INDEX_JOB
INTERVAL = timedelta(minutes=1)


def fts_reindex_job(db: Database) -> JobSpec:
    """A job re-indexing every full-text row the database's stamp says is of an older tokenizer."""

    async def run(_now: datetime) -> int:
        return await reindex(db)

    return JobSpec(JOB_NAME, lambda: INTERVAL, run)
