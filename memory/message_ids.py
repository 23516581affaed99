"""Message ids are never reused. The background jobs read new messages by `id > cursor`; SQLite would
give a new message the id of the newest one deleted (a person forgotten with their messages), and the
jobs would pass over it for good. So deleting messages first records the highest id in use, and a
new message's id is past both that and the newest one kept."""

from __future__ import annotations

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import IdFloor, Message

FLOOR = "messages"


def next_message_id() -> ColumnElement[int]:
    """The id for the next message, as an SQL expression evaluated inside the inserting statement."""
    newest = select(func.coalesce(func.max(Message.id), 0)).scalar_subquery()
    floor = select(func.coalesce(func.max(IdFloor.value), 0)).where(IdFloor.name == FLOOR).scalar_subquery()
    return func.max(newest, floor) + 1


async def retire_ids(session: AsyncSession) -> None:
    """Before messages are deleted: keep every id in use now from ever being handed out again."""
    newest = (await session.execute(select(func.max(Message.id)))).scalar_one_or_none()
    if newest is None:
        return
    stmt = insert(IdFloor).values(name=FLOOR, value=newest)
    await session.execute(
        stmt.on_conflict_do_update(
            index_elements=[IdFloor.name], set_={"value": func.max(IdFloor.value, stmt.excluded.value)}
        )
    )
