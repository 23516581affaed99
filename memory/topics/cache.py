"""The persisted topic cache: topics still collecting messages, one `topic_cache` row each.

A topic gains one *fragment* per topic check that adds messages to it; a check that adds nothing
raises its `no_update_checks`. It is ready to pack after `idle_checks` checks without news or with
more than `max_fragments` fragments. Rows leave the cache in the transaction that commits their
ChatHistory row (memory.history.pack), or when every message they hold is deleted (`drop_messages`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.history import source, terms
from memory.history.digest import theme_of_terms
from memory.history.source import SourceMessage, speaker_names
from memory.models import TopicCacheEntry

STORED_TERMS = 40


@dataclass(frozen=True, slots=True)
class PackRules:
    """When a cached topic is ready to become ChatHistory."""

    idle_checks: int = 3
    max_fragments: int = 5

    def reason(self, entry: TopicCacheEntry) -> str | None:
        """Why `entry` should be packed now ("idle" or "fragments"), or None."""
        if entry.no_update_checks >= self.idle_checks:
            return "idle"
        if entry.fragment_count > self.max_fragments:
            return "fragments"
        return None


async def entries(session: AsyncSession, chat_id: int) -> list[TopicCacheEntry]:
    """A chat's cached topics, oldest first."""
    query = select(TopicCacheEntry).where(TopicCacheEntry.chat_id == chat_id).order_by(TopicCacheEntry.id)
    return list((await session.scalars(query)).all())


def new_entry(chat_id: int, title: str, now: datetime, provenance: str = "offline") -> TopicCacheEntry:
    """An empty topic; `add_fragment` fills it."""
    ts = now.timestamp()
    return TopicCacheEntry(
        chat_id=chat_id,
        title=title,
        thread_keys=[],
        message_ids=[],
        fragment_count=0,
        participants=[],
        no_update_checks=0,
        created_at=ts,
        updated_at=ts,
        terms={},
        first_time=0.0,
        last_time=0.0,
        provenance=provenance,
    )


def add_fragment(
    entry: TopicCacheEntry,
    messages: Sequence[SourceMessage],
    thread_keys: Iterable[str],
    now: datetime,
    weights: terms.TermWeights | None = None,
) -> None:
    """Append one check's messages to a topic as one fragment and reset its idle counter."""
    known = set(entry.message_ids)
    fresh = [m for m in messages if m.id not in known]
    if not fresh:
        return
    # JSON columns are replaced, not mutated, so SQLAlchemy sees the change.
    entry.message_ids = [*entry.message_ids, *(m.id for m in fresh)]
    entry.thread_keys = list(dict.fromkeys([*entry.thread_keys, *thread_keys]))
    people = [m.person_id for m in fresh if m.person_id is not None]
    entry.participants = list(dict.fromkeys([*entry.participants, *people]))
    entry.fragment_count += 1
    entry.no_update_checks = 0
    entry.updated_at = now.timestamp()
    times = [m.time for m in fresh]
    # A topic's time span is unset while it has no message (0.0 is a valid time: 1970-01-01T00:00Z).
    if known:
        times.extend((entry.first_time, entry.last_time))
    entry.first_time, entry.last_time = min(times), max(times)
    added = weights if weights is not None else terms.weigh(m.text for m in fresh)
    entry.terms = terms.trimmed(terms.merge(entry.terms or {}, added), STORED_TERMS)


def mark_idle(entries_: Iterable[TopicCacheEntry], updated: set[int]) -> None:
    """One more check without news for every topic not in `updated`."""
    for entry in entries_:
        if entry.id not in updated:
            entry.no_update_checks += 1


async def drop_messages(session: AsyncSession, message_ids: Sequence[int]) -> int:
    """Take messages that are being deleted out of the cached topics holding them (inside the caller's
    transaction): each topic keeps its other messages, and its terms, title, participants and time span
    are redone offline from them, since any of them may quote or name what is deleted; a topic left
    with no message is deleted. Returns how many topics changed."""
    gone = set(message_ids)
    if not gone:
        return 0
    touched = [e for e in (await session.scalars(select(TopicCacheEntry))).all() if gone & set(e.message_ids)]
    for entry in touched:
        kept = await source.by_ids(session, [i for i in entry.message_ids if i not in gone])
        if not kept:
            await session.delete(entry)
            continue
        entry.message_ids = [i for i in entry.message_ids if i not in gone]
        entry.participants = list(dict.fromkeys(m.person_id for m in kept if m.person_id is not None))
        entry.first_time = min(m.time for m in kept)
        entry.last_time = max(m.time for m in kept)
        entry.terms = terms.trimmed(terms.weigh((m.text for m in kept), speaker_names(kept)), STORED_TERMS)
        entry.title, entry.provenance = theme_of_terms(entry.terms), "offline"
    return len(touched)
