"""Packing a ready topic into a ChatHistory row, in the transaction that removes it from the cache."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.context.render import forward_marked
from memory.embeddings.store import drop_vectors
from memory.history import source
from memory.history.digest import Digest, KeywordMethod, digest, offline_digest_in_runs
from memory.history.source import SourceMessage
from memory.models import ChatHistory, TopicCacheEntry
from memory.ports import LLMPort
from memory.storage import Database
from memory.storage.fts import index_rows, unindex_rows
from memory.storage.sql import rows_naming

log = logging.getLogger(__name__)

HISTORY_FTS = "chat_history_fts"


@dataclass(frozen=True, slots=True)
class Packed:
    """A topic written to ChatHistory (`history_id`), or dropped without a row (`history_id` None)."""

    entry_id: int
    history_id: int | None
    theme: str
    messages: int


def original_text(messages: Sequence[SourceMessage]) -> str:
    """The verbatim conversation, one `transcript_line` per message."""
    return "\n".join(transcript_line(m.when, m.display_name, m.text, m.forwarded) for m in messages)


def transcript_line(when: datetime, name: str, text: str, forwarded: bool = False) -> str:
    """One message of `original_text`: `YYYY-MM-DD HH:MM name: text`, at `when` in the offset the
    message was sent with; a forward's name is marked as the topic prompts mark it
    (`render.forward_marked`: `(forwarded) name`), so its words are not read as the speaker's own.
    Rows packed before forwards were marked have no mark on any line."""
    return f"{when:%Y-%m-%d %H:%M} {forward_marked(name, forwarded)}: {text}"


def participants(messages: Sequence[SourceMessage]) -> list[dict[str, Any]]:
    """Who spoke, most active first: person id, platform user id and the latest display name."""
    counts = Counter(m.user_id for m in messages)
    latest: dict[str, SourceMessage] = {m.user_id: m for m in messages}
    return [
        {
            "person_id": latest[user].person_id,
            "user_id": user,
            "name": latest[user].display_name,
            "messages": n,
            "is_bot": latest[user].is_bot,
        }
        for user, n in counts.most_common()
    ]


def index_body(row: ChatHistory) -> str:
    return "\n".join([row.theme, " ".join(row.keywords), row.summary, *row.key_points, row.original_text])


async def write_history(
    session: AsyncSession, chat_id: int, messages: Sequence[SourceMessage], found: Digest, now: datetime
) -> ChatHistory:
    """Insert one ChatHistory row and its full-text entry (inside the caller's transaction)."""
    row = ChatHistory(
        chat_id=chat_id,
        theme=found.theme,
        keywords=list(found.keywords),
        summary=found.summary,
        key_points=list(found.key_points),
        original_text=original_text(messages),
        participants=participants(messages),
        start_time=min(m.time for m in messages),
        end_time=max(m.time for m in messages),
        source_message_ids=[m.id for m in messages],
        count=0,
        forget_times=0,
        provenance=found.provenance,
        created_at=now.timestamp(),
    )
    session.add(row)
    await session.flush()
    await index_rows(session, HISTORY_FTS, [(row.id, index_body(row))])
    return row


def set_digest(row: ChatHistory, found: Digest) -> None:
    """Give `row` the theme, keywords, summary, key points and provenance of `found`."""
    row.theme, row.keywords, row.summary = found.theme, list(found.keywords), found.summary
    row.key_points, row.provenance = list(found.key_points), found.provenance


async def reindex(session: AsyncSession, changed: Sequence[int], kept: Sequence[ChatHistory]) -> None:
    """After the rows `changed` were rewritten or deleted: the full-text entries of those still there
    (`kept`) written anew, and every one's vector dropped for the backfill to redo."""
    await unindex_rows(session, HISTORY_FTS, changed)
    await drop_vectors(session, "history", changed)
    await session.flush()
    await index_rows(session, HISTORY_FTS, [(r.id, index_body(r)) for r in kept])


async def drop_sources(session: AsyncSession, message_ids: Sequence[int]) -> int:
    """Take messages that are being deleted out of the ChatHistory rows packed from them (inside the
    caller's transaction): each such row is rebuilt offline from the messages it keeps — verbatim text,
    participants, time span, theme, keywords and summary, since any of them may quote the deleted
    words — and re-indexed, its vector dropped for the backfill to redo; a row left with no message is
    deleted. Returns how many rows changed."""
    return await _rebuild(session, message_ids, drop=True)


async def rename_sources(session: AsyncSession, message_ids: Sequence[int]) -> int:
    """After the names these messages were sent under were taken off them (their sender asked to be
    forgotten): the ChatHistory rows packed from them show their speakers as stored now (inside the
    caller's transaction): verbatim text and participants, and the summary and key points when made
    offline (speakers' lines and a list of speakers; a model's summary is its own text and stays as
    written), re-indexed, each row's vector dropped for the backfill to redo. Returns how many rows
    changed."""
    return await _rebuild(session, message_ids, drop=False)


async def _rebuild(session: AsyncSession, message_ids: Sequence[int], *, drop: bool) -> int:
    """The ChatHistory rows packed from `message_ids` written anew from their messages as stored now,
    without those messages when `drop` (`drop_sources`, `rename_sources`)."""
    if not message_ids:
        return 0
    named = set(message_ids)
    ids = await rows_naming(session, "chat_history", "source_message_ids", sorted(named))
    rows = list((await session.scalars(select(ChatHistory).where(ChatHistory.id.in_(ids)))).all())
    rebuilt: list[ChatHistory] = []
    for row in rows:
        kept = await source.by_ids(session, [i for i in row.source_message_ids if not (drop and i in named)])
        if not kept:
            await session.delete(row)
            continue
        if drop or row.provenance == "offline":  # a deleted word may be anywhere; a name, in speakers' lines
            set_digest(row, await offline_digest_in_runs(kept))
        row.original_text, row.participants = original_text(kept), participants(kept)
        row.start_time, row.end_time = min(m.time for m in kept), max(m.time for m in kept)
        row.source_message_ids = [m.id for m in kept]
        rebuilt.append(row)
    await reindex(session, [row.id for row in rows], rebuilt)
    return len(rows)


@dataclass(frozen=True, slots=True)
class PackOptions:
    """How packing summarises: LLM or not, keyword method, and the smallest topic worth a row."""

    use_llm: bool = False
    keyword_method: KeywordMethod = "tfidf"
    min_topic_messages: int = 2


async def pack_entry(
    db: Database, entry_id: int, now: datetime, llm: LLMPort | None, options: PackOptions
) -> Packed | None:
    """Summarise one cached topic and, in one transaction, write its ChatHistory row and remove it
    from the cache. The summary (maybe an LLM call) is made outside the transaction; if the entry
    changed meanwhile nothing is written and None is returned (the next run packs it again). A topic
    moved meanwhile by a chat merge is written to the chat it now belongs to."""
    async with db.read() as session:
        entry = await session.get(TopicCacheEntry, entry_id)
        if entry is None:
            return None
        version = (entry.updated_at, entry.fragment_count, len(entry.message_ids))
        messages = await source.by_ids(session, entry.message_ids)
        title = entry.title
    worth = len(messages) >= options.min_topic_messages
    found = await digest(messages, title, llm, options.use_llm, options.keyword_method) if worth else None
    async with db.write() as session:
        current = await session.get(TopicCacheEntry, entry_id)
        if (
            current is None
            or (current.updated_at, current.fragment_count, len(current.message_ids)) != version
        ):
            return None
        history_id = None
        if found is not None and messages:
            history_id = (await write_history(session, current.chat_id, messages, found, now)).id
            await _name_as_stored_now(session, messages)
        else:
            log.debug(
                "topic %s (%s) has %d messages; dropped without a ChatHistory row",
                entry_id,
                title,
                len(messages),
            )
        await session.delete(current)
    return Packed(entry_id, history_id, found.theme if found else title, len(messages))


async def _name_as_stored_now(session: AsyncSession, read: Sequence[SourceMessage]) -> None:
    """When a speaker's names changed after the topic's messages were `read` (while the summary was
    made: their sender asked to be forgotten, the names taken off their messages), show them in the
    row just written as stored now, as the rows packed before are shown (`rename_sources`)."""
    now_named = {m.id: m.names for m in await source.by_ids(session, [m.id for m in read])}
    if any(now_named.get(m.id, m.names) != m.names for m in read):
        await rename_sources(session, [m.id for m in read])


async def histories(session: AsyncSession, chat_id: int, limit: int = 200) -> list[ChatHistory]:
    """A chat's ChatHistory rows, oldest topic first."""
    query = (
        select(ChatHistory)
        .where(ChatHistory.chat_id == chat_id)
        .order_by(ChatHistory.start_time, ChatHistory.id)
        .limit(limit)
    )
    return list((await session.scalars(query)).all())
