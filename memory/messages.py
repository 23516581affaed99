"""Reading raw messages back: the recent window, ranges after a cursor, lookups by id."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from sqlalchemy import Select, TextClause, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import Chat, Message
from memory.storage.fts import searchable
from memory.storage.sql import in_list
from memory.text.language import READ_CHARS, Language, language_of

# How many of a chat's latest messages say which language it writes in (as many as the default recent
# window of the reply context).
LANGUAGE_MESSAGES = 20


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A raw message as read back for jobs, recall and context."""

    id: int
    chat_id: int
    platform_message_id: str
    person_id: int | None
    speaker: str
    text: str
    time: datetime
    reply_to: str | None
    mentions: tuple[str, ...]
    is_bot: bool
    to_bot: bool
    forwarded: bool = False  # re-shares words written elsewhere (`ChatMessage.forwarded`)


def sent_at(time: float, utc_offset_minutes: int) -> datetime:
    """A stored message time (UTC unix seconds) in the offset it was sent with."""
    tz = timezone(timedelta(minutes=utc_offset_minutes)) if utc_offset_minutes else UTC
    return datetime.fromtimestamp(time, tz)


def to_stored(row: Message) -> StoredMessage:
    """A stored row as `StoredMessage`."""
    return StoredMessage(
        id=row.id,
        chat_id=row.chat_id,
        platform_message_id=row.platform_message_id,
        person_id=row.person_id,
        speaker=row.sender_card or row.sender_name or str(row.person_id),
        text=row.text,
        time=sent_at(row.time, row.utc_offset_minutes),
        reply_to=row.reply_to,
        mentions=tuple(row.mentions or ()),
        is_bot=row.is_bot,
        to_bot=row.to_bot,
        forwarded=row.forwarded,
    )


async def _all(session: AsyncSession, query: Select[Message]) -> list[StoredMessage]:
    return [to_stored(row) for row in (await session.scalars(query)).all()]


async def recent(
    session: AsyncSession, chat_id: int, limit: int, before_id: int | None = None
) -> list[StoredMessage]:
    """The last `limit` messages of a chat (optionally before a message id), oldest first."""
    query = select(Message).where(Message.chat_id == chat_id)
    if before_id is not None:
        query = query.where(Message.id < before_id)
    rows = await _all(session, query.order_by(Message.id.desc()).limit(limit))
    return rows[::-1]


async def chat_language(session: AsyncSession, chat_id: int, also: Iterable[str] = ()) -> Language:
    """The language a chat writes in (`memory.text.language`), read from its members' latest
    LANGUAGE_MESSAGES messages (never the bot's own) and `also` (the question being answered)."""
    query = (
        select(func.substr(Message.text, 1, READ_CHARS))
        .where(Message.chat_id == chat_id, Message.is_bot.is_(False))
        .order_by(Message.id.desc())
        .limit(LANGUAGE_MESSAGES)
    )
    return language_of([*also, *(await session.scalars(query)).all()])


async def after(session: AsyncSession, chat_id: int, cursor: int, limit: int) -> list[StoredMessage]:
    """Messages of a chat with id greater than `cursor`, oldest first, at most `limit`."""
    query = (
        select(Message)
        .where(Message.chat_id == chat_id, Message.id > cursor)
        .order_by(Message.id)
        .limit(limit)
    )
    return await _all(session, query)


async def by_ids(session: AsyncSession, ids: Sequence[int]) -> list[StoredMessage]:
    if not ids:
        return []
    return await _all(session, select(Message).where(Message.id.in_(ids)).order_by(Message.id))


async def by_platform_id(
    session: AsyncSession, chat_id: int, platform_message_id: str
) -> StoredMessage | None:
    """The message of chat `chat_id` the platform calls `platform_message_id` (a reply's target)."""
    query = select(Message).where(
        Message.chat_id == chat_id, Message.platform_message_id == platform_message_id
    )
    found = await _all(session, query)
    return found[0] if found else None


@dataclass(frozen=True, slots=True)
class ChatNow:
    """The chat a stored message is in now: a merge (memory.chat_merge) moves it into another."""

    chat_id: int
    platform: str
    platform_chat_id: str


async def chat_of(session: AsyncSession, message_id: int) -> ChatNow | None:
    """The chat message `message_id` is in now; None when it is no longer stored."""
    row = (
        await session.execute(
            select(Message.chat_id, Chat.platform, Chat.platform_chat_id)
            .join(Chat, Chat.id == Message.chat_id)
            .where(Message.id == message_id)
        )
    ).first()
    return None if row is None else ChatNow(row.chat_id, row.platform, row.platform_chat_id)


async def missing_ids(session: AsyncSession, ids: Iterable[int]) -> set[int]:
    """The ids among these whose messages are no longer stored: deleted (on the platform, or with a
    forgotten person) or replaced by an edited version since a job read them. A job that read them
    before waiting on a model calls this in its writing transaction, so as not to write back words
    that are gone."""
    wanted = set(ids)
    if not wanted:
        return set()
    kept = await session.scalars(select(Message.id).where(Message.id.in_(wanted)))
    return wanted - set(kept.all())


TURN_CONTEXT_SECONDS = 1800.0
"""How close in time a neighbouring message must be to count as the context of a turn."""


def neighbours_query(message_ids: Sequence[int], params: dict[str, object]) -> TextClause:
    """The statement behind `neighbours` (its ids bound into `params`), for a caller on a plain
    connection; `neighbour_pairs` reads its rows."""
    ids = in_list("nm", message_ids, params)
    return text(
        "SELECT m.id, "
        # `time <=` / `time >=` on their own give SQLite a range on the (chat, time) index; inside
        # the OR alone it walked the chat's whole index from one end, for every message.
        f"(SELECT p.id FROM messages p WHERE p.chat_id = m.chat_id AND p.time <= m.time "
        f"AND (p.time < m.time OR p.id < m.id) AND {searchable('p')} "
        "ORDER BY p.time DESC, p.id DESC LIMIT 1), "
        f"(SELECT n.id FROM messages n WHERE n.chat_id = m.chat_id AND n.time >= m.time "
        f"AND (n.time > m.time OR n.id > m.id) AND {searchable('n')} ORDER BY n.time, n.id LIMIT 1) "
        f"FROM messages m WHERE m.id IN ({ids})"
    )


def neighbour_pairs(rows: Iterable[Sequence[Any]]) -> dict[int, tuple[int | None, int | None]]:
    """`neighbours_query`'s rows as `neighbours` returns them."""
    return {
        int(r[0]): (None if r[1] is None else int(r[1]), None if r[2] is None else int(r[2])) for r in rows
    }


async def neighbours(
    session: AsyncSession, message_ids: Sequence[int]
) -> dict[int, tuple[int | None, int | None]]:
    """For each message, the ids of the previous and the next searchable message of its chat (by time,
    then id; None at either end), however far away. Callers filter them by scope or time themselves."""
    if not message_ids:
        return {}
    params: dict[str, object] = {}
    rows = await session.execute(neighbours_query(message_ids, params), params)
    return neighbour_pairs(rows.all())


def with_neighbours(
    message_ids: Iterable[int], around: Mapping[int, tuple[int | None, int | None]]
) -> set[int]:
    """The messages and every neighbour `neighbours` found for them."""
    return set(message_ids) | {i for pair in around.values() for i in pair if i is not None}


def turn_window(
    message_id: int, around: tuple[int | None, int | None], times: Mapping[int, float]
) -> list[int]:
    """The turn window of a message, in order: the previous turn, the message, the next turn, a
    neighbour only when it is in `times` and within `TURN_CONTEXT_SECONDS` of the message."""
    if message_id not in times:
        return []
    when = times[message_id]
    return [
        i
        for i in (around[0], message_id, around[1])
        if i is not None and i in times and (i == message_id or abs(times[i] - when) <= TURN_CONTEXT_SECONDS)
    ]
