"""The turn-window index: every searchable message indexed again together with the turns just before
and after it (within `TURN_CONTEXT_SECONDS`), so that a question whose words are split between a
question and its answer ("what do the kids like?" / "they love nature") finds the answer.

Kept in step with `messages_fts` by the ingestor (new messages and their neighbours) and by whatever
removes messages (their neighbours' windows drop the removed text).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.messages import TURN_CONTEXT_SECONDS, neighbours
from memory.storage.fts import index_rows_tokenized, indexed_tokens, unindex_rows

WINDOWS_FTS = "message_windows_fts"


async def refresh_windows(session: AsyncSession, message_ids: Iterable[int]) -> None:
    """Rebuild the windows of these messages and of their neighbours (after messages were added)."""
    await rebuild_windows(session, await windows_touching(session, sorted(set(message_ids))))


async def rebuild_windows(session: AsyncSession, message_ids: Sequence[int]) -> None:
    """Write the current window of each message; a message no longer searchable loses its window."""
    if not message_ids:
        return
    await unindex_rows(session, WINDOWS_FTS, message_ids)
    around = await neighbours(session, message_ids)
    wanted = set(message_ids) | {i for pair in around.values() for i in pair if i is not None}
    tokens = await indexed_tokens(session, "messages_fts", sorted(wanted))
    times = await _times(session, sorted(wanted))
    rows = []
    for message_id in message_ids:
        if message_id not in tokens:
            continue
        before, after = around.get(message_id, (None, None))
        body: list[str] = []
        for other in (before, message_id, after):
            if other is None or other not in tokens:
                continue
            if other == message_id or abs(times[other] - times[message_id]) <= TURN_CONTEXT_SECONDS:
                body.extend(tokens[other])
        rows.append((message_id, " ".join(body)))
    await index_rows_tokenized(session, WINDOWS_FTS, rows)


async def windows_touching(session: AsyncSession, message_ids: Sequence[int]) -> list[int]:
    """These messages and those whose windows contain them. Before deleting messages, call it, then
    `rebuild_windows` on the result once they are gone."""
    if not message_ids:
        return []
    around = await neighbours(session, message_ids)
    return sorted(set(message_ids) | {i for pair in around.values() for i in pair if i is not None})


async def _times(session: AsyncSession, message_ids: Sequence[int]) -> dict[int, float]:
    if not message_ids:
        return {}
    params = {f"t{i}": message_id for i, message_id in enumerate(message_ids)}
    names = ", ".join(f":{name}" for name in params)
    rows = await session.execute(text(f"SELECT id, time FROM messages WHERE id IN ({names})"), params)
    return {int(r[0]): float(r[1]) for r in rows}
