"""Asking the person model about messages a consolidation read offline only (the model was down, over
budget or refusing then): the chunks it noted (`PersonLlmGap`), newest first, a few requests per run.

The job's every run first removes the chunks none of whose messages can be read any more (deleted, of
people forgotten since, their chat forgotten; `prune_unreadable`): that needs no model, so it is done
also while no person model is set up or in use. Then neighbouring chunks of one chat
are asked about together, up to consolidation's chunk size (`LLM_CHUNK` messages) per request, so a
chat consolidated every few seconds while the model was away is not relearnt message by message.
Each request's messages are read again from its own chat's messages still stored, the model asked
outside any write transaction with consolidation's own prompt (`consolidate.ask_model`), and what it
found merged into the people's facts and timelines in a short transaction, only if the chunks, their
chat (no merge) and their messages are as they were read and nobody was forgotten meanwhile; a person
merged into another meanwhile has it written to the survivor (memory.persons.survivors). The chunks are
then done and removed. Chunks the model answers unusably, or whose request the endpoint refuses while
it answers others, are marked tried together; a tried chunk is asked about once more after
`RETRY_AFTER` (the model or its set-up may have changed) and removed if that answer is unusable too.
How a failing model stops a run is `memory.offline_redo.redo_offline`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from sqlalchemy import case, func, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.chat_marks import merge_mark, merged_since
from memory.messages import missing_ids
from memory.models import Message, PersonLlmGap
from memory.offline_redo import NotWorthAsking, RedoRun, redo_offline
from memory.persons import store
from memory.persons.consolidate import (
    JOB,
    LLM_CHUNK,
    LLM_TASK,
    ConsolidationReport,
    Item,
    add_events,
    apply_statements,
    ask_model,
    read_utterances,
    to_survivors,
    utterances_of,
)
from memory.persons.facts import Fact
from memory.persons.forgotten import COVERS_SQL, Forgotten, all_forgotten
from memory.persons.resolver import PersonResolver
from memory.persons.survivors import Identity, identities
from memory.ports import LLMPort
from memory.storage import Database
from memory.storage.sql import rows_changed, rows_naming

log = logging.getLogger(__name__)

RETRY_AFTER = timedelta(days=7)
"""How long after an unusable answer a chunk is asked about once more (then removed if unusable)."""

Found = tuple[list[Fact], list[tuple[Item, str]]]
Group = tuple[int, ...]
"""The ids of the chunks asked about in one request, newest first."""

# A chunk is kept while one of its messages is stored in its chat and not of a person forgotten since
# (consolidation's rule, `utterances_of`). EXISTS stops at the first such message, so a live chunk
# costs one lookup; CROSS JOIN keeps SQLite from scanning the chat's messages for each chunk instead.
PRUNE_SQL = text(
    "DELETE FROM person_llm_gaps WHERE NOT EXISTS ("
    "SELECT 1 FROM json_each(person_llm_gaps.message_ids) AS j "
    "CROSS JOIN messages AS m ON m.id = j.value AND m.chat_id = person_llm_gaps.chat_id "
    "LEFT JOIN person_forgotten AS f ON f.person_id = m.person_id "
    f"WHERE f.person_id IS NULL OR NOT {COVERS_SQL})"
)


@dataclass(frozen=True, slots=True)
class _Gap:
    """A chunk as read: it is written on only if it still reads the same."""

    id: int
    chat_id: int
    message_ids: tuple[int, ...]
    tried: bool

    @classmethod
    def of(cls, row: PersonLlmGap) -> _Gap:
        return cls(row.id, row.chat_id, tuple(row.message_ids), row.tried)


@dataclass(frozen=True, slots=True)
class _Seen:
    """A request's chunks and messages as read before the model was asked; its findings are written only
    if they still read the same."""

    gaps: tuple[_Gap, ...]
    chat_id: int
    mark: int
    forgotten: dict[int, Forgotten]
    people: dict[int, Identity]
    items: tuple[Item, ...]


async def prune(session: AsyncSession) -> int:
    """Remove the chunks none of whose messages can be read any more; returns how many."""
    return rows_changed(await session.execute(PRUNE_SQL))


async def leave_unread(session: AsyncSession, message_ids: Sequence[int]) -> int:
    """Take these messages out of the chunks waiting for the model (inside the caller's transaction):
    an admin removed or replaced the facts learnt from them, which the model must not learn from them
    again. A chunk left with no message goes; a run asking about one meanwhile gives way, as the
    chunk no longer reads as it did. Returns how many chunks changed."""
    gone = set(message_ids)
    held = await rows_naming(session, PersonLlmGap.__tablename__, "message_ids", sorted(gone))
    gaps = await _gaps(session, tuple(held))
    for gap in gaps:
        kept = [i for i in gap.message_ids if i not in gone]
        if kept:
            gap.message_ids = kept
        else:
            await session.delete(gap)
    return len(gaps)


async def due(session: AsyncSession, limit: int, now: datetime) -> list[Group]:
    """Up to `limit` requests' chunks, newest messages first: chunks not tried yet, or tried at least
    `RETRY_AFTER` before `now`. A request takes a chunk and the older ones of its chat that follow it,
    while their messages together are at most `LLM_CHUNK`."""
    retry_before = store.ts(now - RETRY_AFTER)
    query = (
        select(PersonLlmGap.id, PersonLlmGap.chat_id, PersonLlmGap.message_ids)
        .where(
            or_(
                PersonLlmGap.tried.is_(False),
                PersonLlmGap.tried_at.is_(None),
                PersonLlmGap.tried_at <= retry_before,
            )
        )
        .order_by(PersonLlmGap.time.desc(), PersonLlmGap.id.desc())
        .limit(limit * LLM_CHUNK)  # a chunk holds a message at least
    )
    return group_gaps([(i, c, m) for i, c, m in (await session.execute(query)).all()], limit)


def group_gaps(gaps: Sequence[tuple[int, int, Sequence[int]]], limit: int) -> list[Group]:
    """At most `limit` requests from `gaps` (id, chat id, message ids), newest first: each chunk joins
    the request its chat's previous chunk is in while their messages together stay within `LLM_CHUNK`,
    else starts the next one; one that cannot keeps the older chunks of its chat out of this run."""
    groups: list[tuple[list[int], set[int]]] = []
    filling: dict[int, int] = {}  # chat id -> its request still taking chunks
    for gap_id, chat_id, message_ids in gaps:
        at = filling.get(chat_id)
        if at is not None and len(groups[at][1].union(message_ids)) <= LLM_CHUNK:
            groups[at][0].append(gap_id)
            groups[at][1].update(message_ids)
        elif len(groups) < limit:
            filling[chat_id] = len(groups)
            groups.append(([gap_id], set(message_ids)))
        else:
            filling.pop(chat_id, None)
            if not filling:
                break
    return [tuple(ids) for ids, _ in groups]


async def waiting(session: AsyncSession) -> tuple[int, int]:
    """How many chunks are noted, and how many of them were tried (asked about once more later)."""
    query = select(func.count(), func.coalesce(func.sum(case((PersonLlmGap.tried, 1), else_=0)), 0))
    noted, tried = (await session.execute(query)).one()
    return int(noted), int(tried)


async def _gaps(session: AsyncSession, group: Group) -> list[PersonLlmGap]:
    query = select(PersonLlmGap).where(PersonLlmGap.id.in_(group)).order_by(PersonLlmGap.id)
    return list((await session.scalars(query)).all())


async def _read(db: Database, resolver: PersonResolver, group: Group) -> _Seen | None:
    async with db.read() as session:
        gaps = [_Gap.of(row) for row in await _gaps(session, group)]
        if not gaps:
            return None
        chat_id = gaps[0].chat_id
        mark = await merge_mark(session, chat_id)
        if mark is None:
            return None
        # Memory is scoped to its chat: only this chat's messages are read.
        ids = {i for gap in gaps if gap.chat_id == chat_id for i in gap.message_ids}
        query = select(Message).where(Message.id.in_(ids), Message.chat_id == chat_id).order_by(Message.id)
        rows = list((await session.scalars(query)).all())
        forgotten = await all_forgotten(session)
        utterances = await utterances_of(session, chat_id, rows, forgotten)
        people = await identities(session, (r.person_id for r in rows if r.person_id is not None))
    read = await read_utterances(resolver, chat_id, utterances)
    items = tuple(item for item, _ in read if item.own.strip())
    return _Seen(tuple(gaps), chat_id, mark, forgotten, people, items)


async def _ask(llm: LLMPort, seen: _Seen) -> Found:
    if not seen.items:  # every message deleted or of someone forgotten since
        raise NotWorthAsking
    return await ask_model(llm, seen.items)


async def _store(db: Database, now: datetime, seen: _Seen, found: Found | None) -> bool:
    """Merge `found` and remove the chunks, or (None) mark them tried — removing those tried before or
    with nothing left to ask about — if the chunks and their chat are still as `seen`."""
    async with db.write() as session:
        gaps = await _gaps(session, tuple(gap.id for gap in seen.gaps))
        if tuple(_Gap.of(gap) for gap in gaps) != seen.gaps:
            return False
        if found is None:
            for gap in gaps:
                if gap.tried or not seen.items:
                    await session.delete(gap)
                else:
                    gap.tried, gap.tried_at = True, store.ts(now)
            return True
        if (
            await merged_since(session, seen.chat_id, seen.mark, JOB)
            or await missing_ids(session, [i.message_id for i in seen.items])
            or await all_forgotten(session) != seen.forgotten
        ):
            return False  # read again at a later run
        statements, events = await to_survivors(session, seen.people, *found)
        report = ConsolidationReport()
        await apply_statements(session, seen.chat_id, statements, report)
        await add_events(session, seen.chat_id, events, report)
        for gap in gaps:
            await session.delete(gap)
    return True


async def prune_unreadable(db: Database) -> int:
    """Remove the chunks with nothing left to read, in a transaction of its own; returns how many."""
    async with db.write() as session:
        removed = await prune(session)
    if removed:
        log.info("person relearn: %d chunks with no message left to read removed", removed)
    return removed


async def relearn_offline(
    db: Database, resolver: PersonResolver, llm: LLMPort, limit: int, now: datetime
) -> RedoRun:
    """Ask the person model up to `limit` requests about the chunks read offline only, newest first;
    `now` is when they are marked tried (`prune_unreadable` has removed those with nothing to read)."""
    async with db.read() as session:
        groups = await due(session, limit, now)
    return await redo_offline(
        llm, LLM_TASK, groups, partial(_read, db, resolver), partial(_ask, llm), partial(_store, db, now)
    )
