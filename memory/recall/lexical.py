"""Plain BM25 over raw messages — kept only as the evaluation baseline; recall uses the pipeline."""

from __future__ import annotations

from collections.abc import Sequence

from memory.messages import StoredMessage, by_ids
from memory.storage import Database
from memory.storage.fts import bm25_search, match_expression
from memory.storage.sql import in_list


async def search_messages(
    db: Database, chat_ids: Sequence[int], query: str, limit: int
) -> list[tuple[StoredMessage, float]]:
    """The best-matching raw messages of the given chats by BM25 alone, best first."""
    match = match_expression(query)
    if match is None or not chat_ids:
        return []
    params: dict[str, object] = {}
    scope = f"chat_id IN ({in_list('c', chat_ids, params)})"
    async with db.read() as session:
        hits = await bm25_search(session, "messages_fts", match, limit, "messages", scope, **params)
        rows = {m.id: m for m in await by_ids(session, [rowid for rowid, _ in hits])}
    return [(rows[rowid], score) for rowid, score in hits if rowid in rows]
