"""Message and chat ids are never reused. The background jobs read new messages by `id > cursor`;
SQLite would give a new message the id of the newest one deleted (a person forgotten with their
messages), and the jobs would pass over it for good. Likewise a chat merged into another is deleted,
and a new chat given its id would inherit what is keyed by chat id outside foreign keys (job cursors,
alias versions, in-process caches). So deleting rows first records the highest id in use, and a new
row's id is past both that and the newest one kept."""

from __future__ import annotations

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from memory.models import Chat, IdFloor, Message

FLOOR = "messages"
CHAT_FLOOR = "chats"


def next_message_id() -> ColumnElement[int]:
    """The id for the next message, as an SQL expression evaluated inside the inserting statement."""
    newest = select(func.coalesce(func.max(Message.id), 0)).scalar_subquery()
    floor = select(func.coalesce(func.max(IdFloor.value), 0)).where(IdFloor.name == FLOOR).scalar_subquery()
    return func.max(newest, floor) + 1


# The same for a new chat, in the raw upsert of memory.ingest.
NEXT_CHAT_ID_SQL = (
    "(SELECT max(coalesce((SELECT max(id) FROM chats), 0), "
    f"coalesce((SELECT max(value) FROM id_floors WHERE name = '{CHAT_FLOOR}'), 0)) + 1)"
)


async def retire_ids(session: AsyncSession) -> None:
    """Before messages are deleted: keep every id in use now from ever being handed out again."""
    await _retire(session, FLOOR, Message.id)


async def retire_chat_ids(session: AsyncSession) -> None:
    """Before a chat is deleted: keep every chat id in use now from ever being handed out again."""
    await _retire(session, CHAT_FLOOR, Chat.id)


async def _retire(session: AsyncSession, name: str, column: InstrumentedAttribute[int]) -> None:
    newest = (await session.execute(select(func.max(column)))).scalar_one_or_none()
    if newest is None:
        return
    stmt = insert(IdFloor).values(name=name, value=newest)
    await session.execute(
        stmt.on_conflict_do_update(
            index_elements=[IdFloor.name], set_={"value": func.max(IdFloor.value, stmt.excluded.value)}
        )
    )
