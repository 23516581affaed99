"""Retention of bookkeeping rows that grow with time but are not memory: the LLM usage ledger
(`llm_usage`, read only over the last 24 hours for budgets, `qunyi doctor` and the web console) and
the forgetting log (`forget_log`, what forgetting deleted, shown newest first).

Raw messages, ChatHistory, jargon and people are memory and are never pruned here. Each run deletes
at most `batch` rows per table, oldest first (ids rise with time: a walk in id order, no sort), so a
database that kept years of rows before it had a retention rule is brought down over several runs,
never in one long write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import text

from memory.storage import Database
from memory.storage.sql import rows_changed

# Table → its time column: the rows a retention rule may delete (names are constants, never input).
TABLES: dict[str, str] = {"llm_usage": "time", "forget_log": "time"}


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """How long each bookkeeping table keeps its rows (None: forever), and the most rows one run
    deletes from each table."""

    keep: dict[str, timedelta | None] = field(default_factory=dict)
    batch: int = 5000


async def prune_bookkeeping(db: Database, now: datetime, policy: RetentionPolicy) -> dict[str, int]:
    """Delete rows older than their table's retention (up to `policy.batch` per table, oldest first);
    returns the rows deleted per table. One transaction."""
    pruned: dict[str, int] = {}
    async with db.write() as session:
        for table, keep in policy.keep.items():
            if keep is None or policy.batch <= 0:
                continue
            column = TABLES[table]
            result = await session.execute(
                text(
                    f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE {column} < :cutoff "
                    "ORDER BY id LIMIT :batch)"
                ),
                {"cutoff": (now - keep).timestamp(), "batch": policy.batch},
            )
            pruned[table] = rows_changed(result)
    return pruned
