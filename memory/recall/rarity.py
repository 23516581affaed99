"""How rare each question keyword is in the chats searched (inverse document frequency over their
messages), so that the keyword-overlap signal counts "pottery" for more than "time"."""

from __future__ import annotations

import math
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.recall.keywords import Keyword
from memory.storage.fts import searchable
from memory.storage.sql import in_list


def inverse_document_frequency(document_frequency: int, documents: int) -> float:
    """Robertson–Spärck Jones: log((N − df + 0.5) / (df + 0.5)), never below 0, so a word in half
    the messages or more weighs nothing."""
    return max(0.0, math.log((documents - document_frequency + 0.5) / (document_frequency + 0.5)))


async def keyword_rarity(
    session: AsyncSession, chat_ids: Sequence[int], keywords: Sequence[Keyword]
) -> dict[str, float]:
    """Each keyword's inverse document frequency among the indexed messages of `chat_ids`, by its
    `match` form. Empty when there is nothing to weigh (then every keyword counts the same)."""
    if not keywords or not chat_ids:
        return {}
    params: dict[str, object] = {}
    chats = in_list("rc", chat_ids, params)
    documents = (
        await session.execute(
            text(f"SELECT count(*) FROM messages m WHERE m.chat_id IN ({chats}) AND {searchable('m')}"),
            params,
        )
    ).scalar_one()
    if not documents:
        return {}
    counted = text(
        "SELECT count(*) FROM messages_fts f JOIN messages m ON m.id = f.rowid "
        f"WHERE messages_fts MATCH :term AND m.chat_id IN ({chats})"
    )
    weights: dict[str, float] = {}
    for keyword in keywords:
        if keyword.match in weights:
            continue
        frequency = (await session.execute(counted, {**params, "term": keyword.fts()})).scalar_one()
        weights[keyword.match] = inverse_document_frequency(int(frequency), int(documents))
    return weights
