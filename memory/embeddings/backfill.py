"""Filling in missing vectors: messages in the full-text index and ChatHistory rows without a vector
for the current model, a bounded batch per call. Reading, embedding and writing are separate steps, so
no write transaction waits on the model or the network."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import text

from memory.embeddings.store import save_vectors
from memory.ports import Embedder
from memory.storage import Database

log = logging.getLogger(__name__)

_MISSING_MESSAGES = text(
    "SELECT m.id, m.chat_id, COALESCE(NULLIF(m.sender_card, ''), m.sender_name) AS speaker, m.text "
    "FROM messages m WHERE m.text != '' AND m.id IN (SELECT rowid FROM messages_fts) "
    "AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.kind = 'message' AND e.ref_id = m.id "
    "AND e.model = :model) ORDER BY m.id LIMIT :limit"
)
_MISSING_HISTORY = text(
    "SELECT h.id, h.chat_id, h.theme, h.summary, h.keywords FROM chat_history h "
    "WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.kind = 'history' AND e.ref_id = h.id "
    "AND e.model = :model) ORDER BY h.id LIMIT :limit"
)


def message_document(speaker: str, body: str) -> str:
    """What is embedded for a message: who said it and what they said."""
    return f"{speaker}: {body}" if speaker else body


@dataclass(slots=True)
class BackfillReport:
    messages: int = 0
    histories: int = 0

    @property
    def total(self) -> int:
        return self.messages + self.histories


async def backfill(db: Database, embedder: Embedder, batch_size: int = 256) -> BackfillReport:
    """Embed up to `batch_size` messages and `batch_size` ChatHistory rows that lack a vector."""
    report = BackfillReport()
    params = {"model": embedder.model, "limit": batch_size}
    async with db.read() as session:
        messages = (await session.execute(_MISSING_MESSAGES, params)).all()
        histories = (await session.execute(_MISSING_HISTORY, params)).all()
    if messages:
        vectors = await embedder.embed([message_document(r.speaker or "", r.text) for r in messages])
        async with db.write() as session:
            report.messages = await save_vectors(
                session, "message", embedder.model, [(r.id, r.chat_id) for r in messages], vectors
            )
    if histories:
        docs = [f"{r.theme}\n{r.summary}\n{r.keywords}" for r in histories]
        vectors = await embedder.embed(docs)
        async with db.write() as session:
            report.histories = await save_vectors(
                session, "history", embedder.model, [(r.id, r.chat_id) for r in histories], vectors
            )
    if report.total:
        log.info(
            "embedded %d messages and %d topics with %s", report.messages, report.histories, embedder.model
        )
    return report


async def backfill_all(db: Database, embedder: Embedder, batch_size: int = 256) -> BackfillReport:
    """Run `backfill` until nothing is missing (for imports and evaluations)."""
    total = BackfillReport()
    while True:
        report = await backfill(db, embedder, batch_size)
        total.messages += report.messages
        total.histories += report.histories
        if report.total == 0:
            return total
