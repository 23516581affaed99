"""Turning candidate keys into `RecallHit`s (messages and ChatHistory rows), and the scope check
every hit passes whichever list it came from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.messages import by_ids
from memory.models import ChatHistory
from memory.recall.query import RecallHit, RecallQuery

Key = tuple[str, int]


def participant_ids(participants: Iterable[Any]) -> tuple[int, ...]:
    """Person ids of a ChatHistory participants list (ints, or objects with `person_id`)."""
    ids = []
    for item in participants or ():
        value = item.get("person_id") if isinstance(item, dict) else item
        if isinstance(value, int) and not isinstance(value, bool):
            ids.append(value)
        elif isinstance(value, str) and value.isdigit():
            ids.append(int(value))
    return tuple(ids)


def history_text(row: ChatHistory) -> str:
    """What recall matches a ChatHistory row on and shows of it."""
    return row.summary or row.theme


async def load_hits(
    session: AsyncSession, keys: Iterable[Key], display: Mapping[int, str]
) -> dict[Key, RecallHit]:
    """Hits for the keys that still exist; speakers shown by the name the bot uses for them."""
    wanted = list(keys)
    message_ids = [i for kind, i in wanted if kind == "message"]
    history_ids = [i for kind, i in wanted if kind == "history"]
    hits: dict[Key, RecallHit] = {}
    for m in await by_ids(session, message_ids):
        speaker = display.get(m.person_id, m.speaker) if m.person_id is not None else m.speaker
        hits[("message", m.id)] = RecallHit(
            "message",
            m.id,
            m.chat_id,
            m.text,
            speaker,
            m.time,
            0.0,
            m.person_id,
            m.mentions,
            is_bot=m.is_bot,
            forwarded=m.forwarded,
        )
    if history_ids:
        rows = (await session.scalars(select(ChatHistory).where(ChatHistory.id.in_(history_ids)))).all()
        for row in rows:
            people = participant_ids(row.participants)
            hits[("history", row.id)] = RecallHit(
                "history",
                row.id,
                row.chat_id,
                history_text(row),
                ", ".join(display[p] for p in people if p in display),
                datetime.fromtimestamp(row.end_time, UTC),
                0.0,
                theme=row.theme,
                participants=people,
                count=row.count,
                source_message_ids=tuple(row.source_message_ids or ()),
                document=_history_document(row),
                started=datetime.fromtimestamp(row.start_time, UTC),
            )
    return hits


def _history_document(row: ChatHistory) -> str:
    keywords = " ".join(str(k) for k in row.keywords or ())
    points = " ".join(str(p) for p in row.key_points or ())
    return " ".join(part for part in (row.theme, row.summary, keywords, points) if part)


def in_scope(
    hit: RecallHit, query: RecallQuery, platform_ids: Mapping[int, str], topic_keys: set[Key] | None
) -> bool:
    """Whether a hit respects the query's chats, time range, people and topic."""
    if hit.chat_id not in query.chat_ids:
        return False
    span = query.time_range
    if span is not None:
        if hit.kind == "message" and not span.contains(hit.time):
            return False
        if hit.kind == "history":  # a topic overlapping the range, as the full-text lists select them
            if span.start is not None and hit.time < span.start:
                return False
            if span.end is not None and hit.started is not None and hit.started >= span.end:
                return False
    if query.person_ids:
        wanted = set(query.person_ids)
        uids = {platform_ids[p] for p in wanted if p in platform_ids}
        if not ((hit.person_id in wanted) or (uids & set(hit.mentions)) or (wanted & set(hit.participants))):
            return False
    return topic_keys is None or hit.key in topic_keys
