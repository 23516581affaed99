"""Requests to be forgotten as the readers of stored messages apply them (`PersonForgotten`).

A message is from before a person's request when it was recorded by then — its id is at most the
highest message id at the forget (ids are never handed out twice since 0022, so they are the order
of recording), whatever date its sender's clock gave it — or when it is dated by then (an imported
history recorded later). An edited version is recorded under a new id but counts by the id its first
version was recorded under (`Message.first_id`, 0025): the edit of a message recorded before the request
is from before it, the edit of one recorded after it is not. What they said before is never learnt from
again. Requests made before 0024 have no mark and are read by the date alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import Message, PersonForgotten

if TYPE_CHECKING:
    from memory.ingest import Recorded

COVERS_SQL = "(m.time <= f.time OR coalesce(m.first_id, m.id) <= coalesce(f.last_message_id, 0))"
"""SQL: the message `m` is from before the request `f` (`Forgotten.covers`)."""


@dataclass(frozen=True, slots=True)
class Forgotten:
    """A person's request to be forgotten: made at `time` (POSIX), when the highest message id was
    `last_message_id` (None for a request made before 0024)."""

    time: float
    last_message_id: int | None

    def covers(self, message_id: int, time: float, first_id: int | None = None) -> bool:
        """Whether the message (its id, its POSIX time, and for an edited version the id its first
        version was recorded under) is from before the request."""
        recorded_as = message_id if first_id is None else first_id
        recorded_before = self.last_message_id is not None and recorded_as <= self.last_message_id
        return recorded_before or time <= self.time

    def covers_recorded(self, recorded: Recorded) -> bool:
        """`covers` for a message as it was just recorded."""
        return self.covers(recorded.message_id, recorded.message.time.timestamp(), recorded.first_id)

    def after(self) -> ColumnElement[bool]:
        """SQL on `Message`: the messages not from before the request."""
        later = Message.time > self.time
        if self.last_message_id is None:
            return later
        return and_(later, func.coalesce(Message.first_id, Message.id) > self.last_message_id)


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
