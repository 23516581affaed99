"""Requests to be forgotten as the readers of stored messages apply them (`PersonForgotten`).

A message is from before a person's request when it was recorded by then — its id is at most the
highest message id at the forget (ids are never handed out twice since 0022, so they are the order
of recording), whatever date its sender's clock gave it — or when it is dated by then (an imported
history recorded later). What they said before is never learnt from again. Requests made before
0024 have no mark and are read by the date alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import Message, PersonForgotten

COVERS_SQL = "(m.time <= f.time OR m.id <= coalesce(f.last_message_id, 0))"
"""SQL: the message `m` is from before the request `f` (`Forgotten.covers`)."""


@dataclass(frozen=True, slots=True)
class Forgotten:
    """A person's request to be forgotten: made at `time` (POSIX), when the highest message id was
    `last_message_id` (None for a request made before 0024)."""

    time: float
    last_message_id: int | None

    def covers(self, message_id: int, time: float) -> bool:
        """Whether the message (its id, its POSIX time) is from before the request."""
        recorded_before = self.last_message_id is not None and message_id <= self.last_message_id
        return recorded_before or time <= self.time

    def after(self) -> ColumnElement[bool]:
        """SQL on `Message`: the messages not from before the request."""
        later = Message.time > self.time
        if self.last_message_id is None:
            return later
        return and_(later, Message.id > self.last_message_id)


def _of(row: PersonForgotten) -> Forgotten:
    mark = row.last_message_id
    return Forgotten(float(row.time), None if mark is None else int(mark))


async def forgotten_at(session: AsyncSession, person_id: int | None) -> Forgotten | None:
    """The person's request to be forgotten, or None."""
    if person_id is None:
        return None
    row = await session.get(PersonForgotten, person_id)
    return None if row is None else _of(row)


async def all_forgotten(session: AsyncSession) -> dict[int, Forgotten]:
    """Every forgotten person's request (a handful of rows)."""
    rows = (await session.scalars(select(PersonForgotten))).all()
    return {int(row.person_id): _of(row) for row in rows}


async def newest_message_id(session: AsyncSession) -> int:
    """The highest message id recorded so far (0 when none is): the mark a request made now gets."""
    return int(await session.scalar(select(func.coalesce(func.max(Message.id), 0))) or 0)
