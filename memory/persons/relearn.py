"""Asking the person model about messages a consolidation read offline only (the model was down, over
budget or refusing then): the chunks it noted (`PersonLlmGap`), newest first, a few per run.

Each chunk is read again from its own chat's messages still stored (deleted ones and those of people
forgotten since are left out), the model asked outside any write transaction with consolidation's own
prompt (`consolidate.ask_model`), and what it found merged into the people's facts and timelines in a
short transaction, only if the chunk, its chat (no merge) and its messages are as they were read and
nobody was forgotten meanwhile; the chunk is then done and removed. A chunk the model answers
unusably, or whose request the endpoint refuses while it answers others, is marked tried and not
asked about again. How a failing model stops a run is `memory.offline_redo.redo_offline`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from sqlalchemy import case, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.chat_marks import merge_mark, merged_since
from memory.messages import missing_ids
from memory.models import Message, PersonLlmGap
from memory.offline_redo import NotWorthAsking, RedoRun, redo_offline
from memory.persons.consolidate import (
    JOB,
    LLM_TASK,
    ConsolidationReport,
    Item,
    add_events,
    apply_statements,
    ask_model,
    forgotten_times,
    read_utterances,
    utterances_of,
)
from memory.persons.facts import Fact
from memory.persons.resolver import PersonResolver
from memory.ports import LLMPort
from memory.storage import Database

Found = tuple[list[Fact], list[tuple[Item, str]]]


@dataclass(frozen=True, slots=True)
class _Seen:
    """A chunk as read before the model was asked; its findings are written only if it still reads
    the same."""

    id: int
    chat_id: int
    message_ids: tuple[int, ...]
    mark: int
    forgotten: dict[int, float]
    items: tuple[Item, ...]


async def due(session: AsyncSession, limit: int) -> list[int]:
    """Ids of the chunks not tried yet, newest messages first."""
    query = (
        select(PersonLlmGap.id)
        .where(PersonLlmGap.tried.is_(False))
        .order_by(PersonLlmGap.time.desc(), PersonLlmGap.id.desc())
        .limit(limit)
    )
    return list((await session.scalars(query)).all())


async def waiting(session: AsyncSession) -> tuple[int, int]:
    """How many chunks are noted, and how many of them were tried (never asked about again)."""
    query = select(func.count(), func.coalesce(func.sum(case((PersonLlmGap.tried, 1), else_=0)), 0))
    noted, tried = (await session.execute(query)).one()
    return int(noted), int(tried)


async def _read(db: Database, resolver: PersonResolver, gap_id: int) -> _Seen | None:
    async with db.read() as session:
        gap = await session.get(PersonLlmGap, gap_id)
        if gap is None or gap.tried:
            return None
        mark = await merge_mark(session, gap.chat_id)
        if mark is None:
            return None
        # Memory is scoped to its chat: only this chat's messages are read.
        query = (
            select(Message)
            .where(Message.id.in_(gap.message_ids), Message.chat_id == gap.chat_id)
            .order_by(Message.id)
        )
        rows = list((await session.scalars(query)).all())
        forgotten = await forgotten_times(session)
        utterances = await utterances_of(session, gap.chat_id, rows, forgotten)
        seen = (gap.id, gap.chat_id, tuple(gap.message_ids), mark, forgotten)
    read = await read_utterances(resolver, seen[1], utterances)
    return _Seen(*seen, tuple(item for item, _ in read if item.own.strip()))


async def _ask(llm: LLMPort, seen: _Seen) -> Found:
    if not seen.items:  # every message deleted or of someone forgotten since
        raise NotWorthAsking
    return await ask_model(llm, seen.items)


async def _store(db: Database, seen: _Seen, found: Found | None) -> bool:
    """Merge `found` (None: mark the chunk tried) if the chunk and its chat are still as `seen`."""
    async with db.write() as session:
        gap = await session.get(PersonLlmGap, seen.id)
        if (
            gap is None
            or gap.tried
            or (gap.chat_id, tuple(gap.message_ids)) != (seen.chat_id, seen.message_ids)
        ):
            return False
        if found is None:
            gap.tried = True
            return True
        if (
            await merged_since(session, seen.chat_id, seen.mark, JOB)
            or await missing_ids(session, [i.message_id for i in seen.items])
            or await forgotten_times(session) != seen.forgotten
        ):
            return False  # read again at a later run
        facts, events = found
        report = ConsolidationReport()
        await apply_statements(session, seen.chat_id, facts, report)
        await add_events(session, seen.chat_id, events, report)
        await session.delete(gap)
    return True


async def relearn_offline(db: Database, resolver: PersonResolver, llm: LLMPort, limit: int) -> RedoRun:
    """Ask the person model about up to `limit` chunks read offline only, newest first."""
    async with db.read() as session:
        ids = await due(session, limit)
    return await redo_offline(
        llm, LLM_TASK, ids, partial(_read, db, resolver), partial(_ask, llm), partial(_store, db)
    )
