"""How rare each question keyword is in the chats searched (inverse document frequency over their
messages), so that the keyword-overlap signal counts "pottery" for more than "time"."""

from __future__ import annotations

import math
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.recall.keywords import Keyword
from memory.storage import fts
from memory.storage.sql import in_list

_ARMS_PER_STATEMENT = 400  # SQLite allows 500 by default


def inverse_document_frequency(document_frequency: int, documents: int) -> float:
    """Robertson–Spärck Jones: log((N − df + 0.5) / (df + 0.5)), never below 0, so a word in half
    the messages or more weighs nothing."""
    return max(0.0, math.log((documents - document_frequency + 0.5) / (document_frequency + 0.5)))


async def keyword_rarity(
    session: AsyncSession, chat_ids: Sequence[int], keywords: Sequence[Keyword]
) -> dict[str, float]:
    """Each keyword's inverse document frequency among the messages of `chat_ids`, by its
    `match` form. Empty when there is nothing to weigh (then every keyword counts the same)."""
    if not keywords or not chat_ids:
        return {}
    distinct = list({k.match: k for k in keywords}.values())
    params: dict[str, object] = {}
    chats = in_list("rc", chat_ids, params)
    # The chats' size (every message, indexed or not: an index-only count), then each keyword's
    # matches among them. A small scope is listed once per keyword (`id IN (matches) AND chat_id IN
    # (…)` reads the chats' index); in a large one, each match's message is looked up by its id, in
    # proportion to the matches. Correlating the other way round would run MATCH once per message.
    # One statement per batch of keywords, as SQLite caps the arms of a compound SELECT.
    found = await session.execute(text(f"SELECT count(*) FROM messages WHERE chat_id IN ({chats})"), params)
    documents = int(found.scalar_one())
    if not documents:
        return {}
    if documents < fts.LIST_SCOPE_BELOW:
        arm = (
            "SELECT {i}, count(*) FROM messages WHERE id IN (SELECT rowid FROM messages_fts "
            "WHERE messages_fts MATCH :term{i}) AND chat_id IN ({chats})"
        )
    else:
        arm = (
            "SELECT {i}, count(*) FROM messages_fts WHERE messages_fts MATCH :term{i} AND EXISTS "
            "(SELECT 1 FROM messages WHERE messages.id = messages_fts.rowid AND chat_id IN ({chats}))"
        )
    counts: dict[int, int] = {}
    for first in range(0, len(distinct), _ARMS_PER_STATEMENT):
        batch_params = dict(params)
        parts = []
        for i in range(first, min(first + _ARMS_PER_STATEMENT, len(distinct))):
            batch_params[f"term{i}"] = distinct[i].fts()
            parts.append(arm.format(i=i, chats=chats))
        rows = await session.execute(text(" UNION ALL ".join(parts)), batch_params)
        counts.update((int(row[0]), int(row[1])) for row in rows)
    return {
        keyword.match: inverse_document_frequency(counts.get(i, 0), documents)
        for i, keyword in enumerate(distinct)
    }
