"""Raw messages as the topic check and packing read them: with the speaker's platform id and names."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias, cast

from sqlalchemy import Boolean, Select, func, literal_column, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.messages import sent_at
from memory.models import Chat, Message, Person, PersonChatName
from memory.storage.fts import searchable
from memory.text import normalize


@dataclass(frozen=True, slots=True)
class SourceMessage:
    """One raw message with what topic work needs: who (platform id, person id, names) and when.
    `searchable` is false for what the full-text index leaves out: members' memory commands and the
    bot's answers to them (which quote recalled memories). `forwarded` marks a forward."""

    id: int
    chat_id: int
    platform_message_id: str
    person_id: int | None
    user_id: str
    names: tuple[str, ...]
    text: str
    time: float
    utc_offset_minutes: int
    reply_to: str | None
    mentions: tuple[str, ...]
    is_bot: bool
    searchable: bool = True
    forwarded: bool = False  # re-shares words written elsewhere (`ChatMessage.forwarded`)

    @property
    def display_name(self) -> str:
        """The name shown for the speaker: the bot-chosen alias, group card or nickname."""
        return display_name_of(self.names, self.user_id)

    @property
    def when(self) -> datetime:
        """The message time, in the offset it was sent with."""
        return sent_at(self.time, self.utc_offset_minutes)


def display_name_of(names: Iterable[str | None], user_id: str) -> str:
    """The name a speaker is shown under: the first of their `names` (the bot-chosen alias, group
    card, nickname) that is not empty, else their platform user id."""
    return next((n for n in names if n), user_id)


_CARD_PARTS = re.compile(r"[｜|/\-—_（）()\[\]【】·\s]+")


def speaker_names(messages: Iterable[SourceMessage]) -> frozenset[str]:
    """Normalised names the speakers go by (nickname, alias, the name part of a group card such as
    "阿红" of "阿红｜前端"), for leaving names out of topic terms."""
    out: set[str] = set()
    for m in messages:
        for name in m.names:
            first = _CARD_PARTS.split(normalize(name).strip())[0]
            if first:
                out.add(first)
    return frozenset(n for n in out if n)


_COLUMNS = (
    Message,
    Person.platform_user_id,
    PersonChatName.person_name,
    Person.nickname,
    literal_column(searchable(Message.__tablename__), Boolean),
)


def _source(row: Any) -> SourceMessage:
    message, user_id, chat_name, nickname, indexed = row
    known = (chat_name, message.sender_card, message.sender_name, nickname)
    names = tuple(dict.fromkeys(n for n in known if n))
    return SourceMessage(
        id=message.id,
        chat_id=message.chat_id,
        platform_message_id=message.platform_message_id,
        person_id=message.person_id,
        user_id=user_id or str(message.person_id),
        names=names,
        text=message.text,
        time=message.time,
        utc_offset_minutes=message.utc_offset_minutes,
        reply_to=message.reply_to,
        mentions=tuple(message.mentions or ()),
        is_bot=message.is_bot,
        searchable=bool(indexed),
        forwarded=message.forwarded,
    )


NamedRows: TypeAlias = Select[Message, str | None, str | None, str | None, bool]


def _query() -> NamedRows:
    """Messages with their speaker's names; the name the chat uses for them comes first."""
    in_chat = (PersonChatName.chat_id == Message.chat_id) & (PersonChatName.person_id == Message.person_id)
    query = (
        select(*_COLUMNS)
        .join(Person, Person.id == Message.person_id, isouter=True)
        .join(PersonChatName, in_chat, isouter=True)
    )
    return cast(NamedRows, query)  # outer joins: the name columns may be NULL


async def after_cursor(session: AsyncSession, chat_id: int, cursor: int, limit: int) -> list[SourceMessage]:
    """Up to `limit` messages of a chat with id above `cursor`, in id order."""
    query = _query().where(Message.chat_id == chat_id, Message.id > cursor).order_by(Message.id).limit(limit)
    return [_source(row) for row in (await session.execute(query)).all()]


async def by_ids(session: AsyncSession, ids: Sequence[int]) -> list[SourceMessage]:
    """The messages with these ids, in time order (then id)."""
    if not ids:
        return []
    query = _query().where(Message.id.in_(list(ids))).order_by(Message.time, Message.id)
    return [_source(row) for row in (await session.execute(query)).all()]


async def pending_stats(session: AsyncSession, chat_id: int, cursor: int) -> tuple[int, float | None]:
    """How many messages wait after `cursor`, and the time of the oldest of them."""
    row = (
        await session.execute(
            select(func.count(Message.id), func.min(Message.time)).where(
                Message.chat_id == chat_id, Message.id > cursor
            )
        )
    ).one()
    return int(row[0]), (float(row[1]) if row[1] is not None else None)


async def newest_time(session: AsyncSession, chat_id: int, not_after: float | None = None) -> float | None:
    """The time of a chat's newest message (of those dated `not_after` or earlier, if given), or None
    when it has none."""
    query = select(func.max(Message.time)).where(Message.chat_id == chat_id)
    if not_after is not None:
        query = query.where(Message.time <= not_after)
    newest = await session.scalar(query)
    return float(newest) if newest is not None else None


async def chats_with_messages_after(session: AsyncSession, cursors: dict[int, int]) -> list[int]:
    """Chats that have a message beyond their cursor (chats without a cursor count from zero).

    Each chat's newest id is one seek on the (chat_id, id) index; grouping the messages by chat
    read every message at each run."""
    newest = select(func.max(Message.id)).where(Message.chat_id == Chat.id).correlate(Chat).scalar_subquery()
    rows = (await session.execute(select(Chat.id, newest))).all()
    return sorted(int(chat) for chat, top in rows if top is not None and int(top) > cursors.get(int(chat), 0))
