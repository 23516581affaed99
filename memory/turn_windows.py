"""The turn-window index: every searchable message indexed again together with the turns just before
and after it (within `TURN_CONTEXT_SECONDS`), so that a question whose words are split between a
question and its answer ("what do the kids like?" / "they love nature") finds the answer.

Kept in step with `messages_fts` by the ingestor (new messages and their neighbours) and by whatever
removes messages (their neighbours' windows drop the removed text).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.messages import neighbours, turn_window, with_neighbours
from memory.storage.fts import index_rows_tokenized, unindex_rows
from memory.storage.sql import in_list

WINDOWS_FTS = "message_windows_fts"


async def refresh_windows(session: AsyncSession, message_ids: Iterable[int]) -> list[int]:
    """Rebuild the windows of these messages and of their neighbours (after messages were added);
    returns the neighbours whose windows changed."""
    added = sorted(set(message_ids))
    if not added:
        return []
    around = await neighbours(session, added)
    touching = sorted(with_neighbours(added, around))
    around.update(await neighbours(session, [i for i in touching if i not in around]))
    await _write_windows(session, touching, around)
    new = set(added)
    return [i for i in touching if i not in new]


async def rebuild_windows(session: AsyncSession, message_ids: Sequence[int]) -> None:
    """Write the current window of each message; a message no longer searchable loses its window."""
    if message_ids:
        await _write_windows(session, message_ids, await neighbours(session, message_ids))


async def _write_windows(
    session: AsyncSession, message_ids: Sequence[int], around: Mapping[int, tuple[int | None, int | None]]
) -> None:
    await unindex_rows(session, WINDOWS_FTS, message_ids)
    turns = await _timed_tokens(session, sorted(with_neighbours(message_ids, around)))
    times = {i: when for i, (when, _tokens) in turns.items()}
    rows = []
    for message_id in message_ids:
        window = turn_window(message_id, around.get(message_id, (None, None)), times)
        if window:
            rows.append((message_id, " ".join(token for i in window for token in turns[i][1])))
    await index_rows_tokenized(session, WINDOWS_FTS, rows)


async def windows_touching(session: AsyncSession, message_ids: Sequence[int]) -> list[int]:
    """These messages and those whose windows contain them. Before deleting messages, call it, then
    `rebuild_windows` on the result once they are gone."""
    if not message_ids:
        return []
    return sorted(with_neighbours(message_ids, await neighbours(session, message_ids)))


async def _timed_tokens(
    session: AsyncSession, message_ids: Sequence[int]
) -> dict[int, tuple[float, list[str]]]:
    """Time and indexed tokens of each searchable message among these."""
    params: dict[str, object] = {}
    ids = in_list("t", message_ids, params)
    rows = await session.execute(
        text(
            "SELECT m.id, m.time, f.body FROM messages m JOIN messages_fts f ON f.rowid = m.id "
            f"WHERE m.id IN ({ids})"
        ),
        params,
    )
    return {int(r[0]): (float(r[1]), str(r[2]).split()) for r in rows}
