"""Asking the summary model again about topics packed offline (the model was down, over budget, or not
configured yet), newest first, a few per run.

Each row is digested by `llm_digest`, the packing prompt, from its own chat's source messages, outside
any write transaction; the answer is stored in a short one only if the row is as it was read (not
merged, forgotten, rebuilt by a deletion or a name cleanup meanwhile), with its full-text entry
rewritten and its vector dropped for the embedding backfill to redo. A row the model answers
unusably, or whose request the endpoint refuses while it answers others, is marked tried
(`ChatHistory.digest_tried`: its source ids then) and asked again only once its messages change.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from sqlalchemy import case, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.history import source
from memory.history.digest import Digest, KeywordMethod, llm_digest
from memory.history.pack import reindex, set_digest
from memory.history.source import SourceMessage
from memory.models import ChatHistory
from memory.offline_redo import NotWorthAsking, RedoRun, redo_offline
from memory.ports import LLMPort
from memory.storage import Database

TASK = "summary"

# json() makes both sides one canonical text, whoever wrote them.
_NOT_TRIED = text(
    "(chat_history.digest_tried IS NULL "
    "OR json(chat_history.digest_tried) != json(chat_history.source_message_ids))"
)


@dataclass(frozen=True, slots=True)
class _Seen:
    """A row as read before the model was asked; it is written only if it still reads the same."""

    id: int
    chat_id: int
    theme: str
    summary: str
    keywords: tuple[str, ...]
    source_ids: tuple[int, ...]
    original_text: str
    provenance: str

    @classmethod
    def of(cls, row: ChatHistory) -> _Seen:
        return cls(
            row.id,
            row.chat_id,
            row.theme,
            row.summary,
            tuple(row.keywords),
            tuple(row.source_message_ids),
            row.original_text,
            row.provenance,
        )


async def due(session: AsyncSession, limit: int) -> list[int]:
    """Ids of offline rows not tried with their current messages, newest topic first."""
    query = (
        select(ChatHistory.id)
        .where(ChatHistory.provenance == "offline", _NOT_TRIED)
        .order_by(ChatHistory.end_time.desc(), ChatHistory.id.desc())
        .limit(limit)
    )
    return list((await session.scalars(query)).all())


async def waiting(session: AsyncSession) -> tuple[int, int]:
    """How many rows are offline, and how many of them were tried with their current messages (not
    asked again until those change)."""
    query = select(func.count(), func.coalesce(func.sum(case((_NOT_TRIED, 0), else_=1)), 0)).where(
        ChatHistory.provenance == "offline"
    )
    offline, tried = (await session.execute(query)).one()
    return int(offline), int(tried)


async def _read(db: Database, row_id: int) -> tuple[_Seen, list[SourceMessage]] | None:
    async with db.read() as session:
        row = await session.get(ChatHistory, row_id)
        if row is None or row.provenance != "offline":
            return None
        seen = _Seen.of(row)
        found = await source.by_ids(session, list(seen.source_ids))
    # Memory is scoped to its chat: only this chat's messages are shown to the model.
    return seen, [m for m in found if m.chat_id == seen.chat_id]


async def _store(db: Database, seen: _Seen, found: Digest | None) -> bool:
    """Write `found` (None: mark the row tried) if the row is still as `seen`."""
    async with db.write() as session:
        row = await session.get(ChatHistory, seen.id)
        if row is None or _Seen.of(row) != seen:
            return False
        if found is None:
            row.digest_tried = list(seen.source_ids)
            return True
        set_digest(row, found)
        row.digest_tried = None
        await reindex(session, [row.id], [row])
    return True


async def redigest_offline(
    db: Database, llm: LLMPort, limit: int, method: KeywordMethod = "tfidf"
) -> RedoRun:
    """Give up to `limit` offline rows the summary model's digest, newest first; how a failing or
    refusing model stops the run is `memory.offline_redo.redo_offline`'s."""
    async with db.read() as session:
        ids = await due(session, limit)

    async def ask(read: tuple[_Seen, list[SourceMessage]]) -> Digest:
        seen, messages = read
        if len(messages) != len(seen.source_ids):
            # Messages gone or in another chat: a deletion will rebuild the row, making it due again.
            raise NotWorthAsking
        return await llm_digest(llm, messages, seen.theme, method)

    async def store(read: tuple[_Seen, list[SourceMessage]], found: Digest | None) -> bool:
        return await _store(db, read[0], found)

    return await redo_offline(llm, TASK, ids, partial(_read, db), ask, store)
