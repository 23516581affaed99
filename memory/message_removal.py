"""Removing stored messages together with everything derived from them.

Used when a platform says a message was deleted (a QQ 撤回, a Discord delete), when it says a message
was edited (the old version goes, the new one is recorded as a message of its own, so every job reads
it afresh), and when a person is forgotten with their messages. What goes with a message: its index
rows and vector, its words in its neighbours' turn windows, in cached topics and in packed ChatHistory
(rebuilt offline from what is kept) and in the topic check's thread state, the quote of it inside
replies, the preference documents and the people's facts, timeline events and aliases learnt from it,
and its place in its sender's message counts.
Jargon evidence goes by cascade, and a meaning the model inferred from it (or from the messages around
it) is dropped, to be inferred again from what is left; a term's counts stay, as they are counts and
not text.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.ext.asyncio import AsyncSession

from memory.embeddings.store import drop_vectors
from memory.history.pack import drop_sources
from memory.jargon import dictionary
from memory.message_ids import retire_ids
from memory.models import ChatMember, DeletedMessage, Message, Person, PreferenceDoc
from memory.persons import store
from memory.persons.evidence import drop_message_evidence
from memory.recall.preferences import PREFERENCE_FTS
from memory.storage.fts import unindex_rows
from memory.storage.sql import json_values
from memory.topics import cache as topic_cache
from memory.topics import check as topic_check
from memory.turn_windows import rebuild_windows, windows_touching
from memory.types import SegmentKind

ERASE_BATCH = 5_000
"""Messages removed per round. A round binds up to five SQL variables per message (it, its neighbours
and theirs, whose turn windows are rebuilt); SQLite refuses a statement with more than 32766 (its
default build; 250000 in Debian's)."""


async def erase_messages(session: AsyncSession, message_ids: Sequence[int], now: float) -> set[int | None]:
    """Delete these messages and what was derived from them, inside the caller's transaction (`now`
    dates the jargon review trail), `ERASE_BATCH` at a time. Returns the chat scopes (None: global)
    whose people's memory changed (their name versions are bumped)."""
    ids = sorted(set(message_ids))
    scopes: set[int | None] = set()
    for start in range(0, len(ids), ERASE_BATCH):
        scopes |= await _erase(session, ids[start : start + ERASE_BATCH], now)
    for scope in scopes:
        await store.bump_version(session, scope)
    return scopes


async def _erase(session: AsyncSession, ids: Sequence[int], now: float) -> set[int | None]:
    await dictionary.drop_meanings_read_from(session, ids, now)
    touching = await windows_touching(session, ids)
    scopes = await drop_message_evidence(session, ids)
    docs = list(
        (await session.scalars(select(PreferenceDoc.id).where(PreferenceDoc.message_id.in_(ids)))).all()
    )
    await unindex_rows(session, PREFERENCE_FTS, docs)
    await drop_vectors(session, "preference", docs)
    await session.execute(delete(PreferenceDoc).where(PreferenceDoc.id.in_(docs)))
    await drop_sources(session, ids)
    await topic_cache.drop_messages(session, ids)
    await topic_check.forget_messages(session, ids)
    await _unquote(session, ids)
    await unindex_rows(session, "messages_fts", ids)
    await drop_vectors(session, "message", touching)
    await retire_ids(session)
    await _uncount(session, ids)
    await session.execute(delete(Message).where(Message.id.in_(ids)))
    await rebuild_windows(session, touching)
    return scopes


async def remember_deleted(session: AsyncSession, chat_id: int, platform_id: str, when: float) -> None:
    """Note that the platform deleted this message, so that it is not recorded again."""
    stmt = insert(DeletedMessage).values(chat_id=chat_id, platform_message_id=platform_id, time=when)
    await session.execute(stmt.on_conflict_do_nothing())


async def deleted_among(session: AsyncSession, chat_id: int, platform_ids: Sequence[str]) -> set[str]:
    """Which of these platform message ids of a chat the platform said were deleted (one query)."""
    if not platform_ids:
        return set()
    found = await session.scalars(
        select(DeletedMessage.platform_message_id).where(
            DeletedMessage.chat_id == chat_id,
            DeletedMessage.platform_message_id.in_(json_values(platform_ids)),
        )
    )
    return set(found.all())


async def _uncount(session: AsyncSession, message_ids: Sequence[int]) -> None:
    """Take these messages out of their senders' message counts, overall and per chat."""
    senders = (
        await session.execute(
            select(Message.chat_id, Message.person_id, func.count())
            .where(Message.id.in_(message_ids), Message.person_id.is_not(None))
            .group_by(Message.chat_id, Message.person_id)
        )
    ).all()
    for chat_id, person_id, count in senders:
        await session.execute(
            update(ChatMember)
            .where(ChatMember.chat_id == chat_id, ChatMember.person_id == person_id)
            .values(message_count=func.max(ChatMember.message_count - count, 0))
        )
        await session.execute(
            update(Person)
            .where(Person.id == person_id)
            .values(message_count=func.max(Person.message_count - count, 0))
        )


async def _unquote(session: AsyncSession, message_ids: Sequence[int]) -> None:
    """Clear the quoted text of these messages inside the replies to them. A reply is found by its
    stored link (`reply_to`); its reply segment keeps the platform's id as sent, which a chat merge
    does not rename (memory.chat_merge), so any reply segment of it is the quote."""
    where = Message.id.in_(message_ids)
    gone: dict[int, list[str]] = {}
    for chat_id, platform_id in await session.execute(
        select(Message.chat_id, Message.platform_message_id).where(where)
    ):
        gone.setdefault(chat_id, []).append(platform_id)
    for chat_id, platform_ids in gone.items():  # one pass over each chat: `reply_to` has no index
        replies = await session.scalars(
            select(Message).where(Message.chat_id == chat_id, Message.reply_to.in_(platform_ids))
        )
        for reply in replies.all():
            segments = [
                {**s, "text": ""} if s.get("kind") == SegmentKind.REPLY.value else s
                for s in reply.segments or ()
            ]
            if segments != reply.segments:
                reply.segments = segments
