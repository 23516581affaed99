"""Step 1 of recall: candidate lists, each ranked best first, every one already inside the scope.

Lexical: BM25 over the jieba full-text indexes of messages, turn windows (a message with the turns
around it), ChatHistory and preference documents (a window or a preference document stands for its
message). Structural: when the question names a time or people but
few words, the messages of that time or by those people.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.recall.query import TimeRange
from memory.recall.timeexpr import TimeHint
from memory.storage.fts import bm25_search, searchable
from memory.storage.sql import in_list

Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Scope:
    """The hard limits of a recall as SQL conditions: chats, time range, people."""

    chat_ids: tuple[int, ...]
    time_range: TimeRange | None = None
    person_ids: tuple[int, ...] = ()
    person_platform_ids: tuple[str, ...] = ()

    def messages(self, params: dict[str, object]) -> str:
        """A condition on `messages` rows (unqualified columns)."""
        parts = [f"chat_id IN ({in_list('sc', self.chat_ids, params)})"]
        if self.time_range is not None and self.time_range.start is not None:
            params["st0"] = self.time_range.start.timestamp()
            parts.append("time >= :st0")
        if self.time_range is not None and self.time_range.end is not None:
            params["st1"] = self.time_range.end.timestamp()
            parts.append("time < :st1")
        if self.person_ids:
            ids = in_list("sp", self.person_ids, params)
            uids = in_list("su", self.person_platform_ids, params)
            parts.append(
                f"(person_id IN ({ids}) OR EXISTS (SELECT 1 FROM json_each(messages.mentions) j "
                f"WHERE j.value IN ({uids})))"
            )
        return " AND ".join(parts)

    def histories(self, params: dict[str, object]) -> str:
        """A condition on `chat_history` rows: overlapping the time range, involving the people."""
        parts = [f"chat_id IN ({in_list('sc', self.chat_ids, params)})"]
        if self.time_range is not None and self.time_range.start is not None:
            params["st0"] = self.time_range.start.timestamp()
            parts.append("end_time >= :st0")
        if self.time_range is not None and self.time_range.end is not None:
            params["st1"] = self.time_range.end.timestamp()
            parts.append("start_time < :st1")
        if self.person_ids:
            ids = in_list("sp", self.person_ids, params)
            parts.append(
                "EXISTS (SELECT 1 FROM json_each(chat_history.participants) j WHERE "
                "CASE WHEN j.type = 'object' THEN json_extract(j.value, '$.person_id') "
                f"WHEN j.type = 'integer' THEN j.value END IN ({ids}))"
            )
        return " AND ".join(parts)

    def preferences(self, params: dict[str, object]) -> str:
        """A condition on `preference_docs` rows: their message is in scope (looked up by its id)."""
        return (
            "EXISTS (SELECT 1 FROM messages WHERE messages.id = preference_docs.message_id "
            f"AND {self.messages(params)})"
        )


async def lexical_messages(
    session: AsyncSession, scope: Scope, match: str, limit: int, table: str = "messages_fts"
) -> list[tuple[Key, float]]:
    """Messages matching, by their own text (`messages_fts`) or by their turn window (`WINDOWS_FTS`)."""
    params: dict[str, object] = {}
    hits = await bm25_search(session, table, match, limit, "messages", scope.messages(params), **params)
    return [(("message", rowid), score) for rowid, score in hits]


async def lexical_histories(
    session: AsyncSession, scope: Scope, match: str, limit: int
) -> list[tuple[Key, float]]:
    params: dict[str, object] = {}
    where = scope.histories(params)
    hits = await bm25_search(session, "chat_history_fts", match, limit, "chat_history", where, **params)
    return [(("history", rowid), score) for rowid, score in hits]


async def lexical_preferences(
    session: AsyncSession, scope: Scope, match: str, limit: int
) -> list[tuple[Key, float]]:
    """Preference documents matching, reported as their source messages."""
    params: dict[str, object] = {}
    where = scope.preferences(params)
    hits = await bm25_search(session, "preference_fts", match, limit, "preference_docs", where, **params)
    if not hits:
        return []
    id_params: dict[str, object] = {}
    ids = in_list("pd", [rowid for rowid, _ in hits], id_params)
    rows = await session.execute(
        text(f"SELECT id, message_id FROM preference_docs WHERE id IN ({ids})"), id_params
    )
    source = {int(r[0]): int(r[1]) for r in rows}
    return [(("message", source[rowid]), score) for rowid, score in hits if rowid in source]


async def messages_in_window(
    session: AsyncSession, scope: Scope, hint: TimeHint, limit: int
) -> list[tuple[Key, float]]:
    """Messages of a time hint, for questions that are mostly a time: those inside its window first
    (newest first), then those within its tolerance, nearest to the window first."""
    params: dict[str, object] = {}
    where = scope.messages(params)
    start, end = hint.start.timestamp(), hint.end.timestamp()
    margin = hint.tolerance.total_seconds()
    params.update(c0=start, c1=end, w0=start - margin, w1=end + margin, lim=limit)
    bounds = (
        f"SELECT id FROM messages WHERE {where} AND time >= :w0 AND time < :w1 AND {searchable('messages')}"
    )
    # The window's own messages (distance 0, its ends included) come first, newest first: when they
    # fill the list, the newest of them are the answer, read backwards along the (chat, time) index.
    # Ranking the tolerance too sorted every message of the window and of its margins (a month of a
    # busy group for "上个月").
    inside = await session.execute(
        text(f"{bounds} AND time >= :c0 AND time <= :c1 ORDER BY time DESC, id DESC LIMIT :lim"), params
    )
    ids = [int(r[0]) for r in inside]
    if len(ids) < limit:
        nearest = "ORDER BY max(:c0 - time, time - :c1, 0) ASC, time DESC, id DESC LIMIT :lim"
        rows = await session.execute(text(f"{bounds} {nearest}"), params)
        ids = [int(r[0]) for r in rows]
    return [(("message", i), 1.0) for i in ids]


async def messages_by_people(
    session: AsyncSession, scope: Scope, person_ids: Sequence[int], limit: int
) -> list[tuple[Key, float]]:
    """The latest messages spoken by the given people, for questions that are mostly a name."""
    return await latest_messages(session, scope, limit, person_ids)


async def latest_messages(
    session: AsyncSession, scope: Scope, limit: int, person_ids: Sequence[int] = ()
) -> list[tuple[Key, float]]:
    """The latest searchable messages inside the scope (only those spoken by `person_ids` when
    given), newest first."""
    params: dict[str, object] = {"lim": limit}
    where = scope.messages(params)
    if person_ids:
        where += f" AND person_id IN ({in_list('np', person_ids, params)})"
    rows = await session.execute(
        text(
            f"SELECT id FROM messages WHERE {where} AND {searchable('messages')} "
            "ORDER BY time DESC, id DESC LIMIT :lim"
        ),
        params,
    )
    return [(("message", int(r[0])), 1.0) for r in rows]
