"""Whether a database holds every table of its schema: one dropped by hand, or lost to a tool that
edited the file, passes the schema revision check and fails only the first query that reads it."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import Base

FTS_TABLES = ("messages_fts", "chat_history_fts", "message_windows_fts", "preference_fts")
"""The FTS5 indexes the migrations create (virtual tables the ORM models do not list)."""


async def missing_tables(session: AsyncSession) -> list[str]:
    """The schema's tables the database does not hold, sorted (none for a sound database)."""
    rows = await session.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'"))
    present = set(rows.scalars())
    return sorted((set(Base.metadata.tables) | set(FTS_TABLES)) - present)
