""" "What the bot now remembers": a per-chat summary printed after a replay and by `qunyi status`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sqlalchemy import func, select

from memory.directory import members
from memory.jargon import dictionary
from memory.models import Chat, Message
from memory.service import MemoryService
from memory.text import truncate


@dataclass(slots=True)
class ChatSummary:
    chat_id: int
    title: str
    sections: list[tuple[str, list[str]]] = field(default_factory=list)


SummarySection = Callable[[MemoryService, int], Awaitable[tuple[str, list[str]] | None]]


async def people_section(memory: MemoryService, chat_id: int) -> tuple[str, list[str]] | None:
    async with memory.db.read() as session:
        found = [m for m in await members(session, chat_id) if not m.is_bot]
    if not found:
        return None
    lines = []
    for m in found[:12]:
        others = ", ".join(sorted({n for n in (m.nickname, m.card) if n and n != m.name}))
        lines.append(f"{m.name}" + (f" (also {others})" if others else "") + f" — {m.message_count} messages")
    return "People", lines


async def jargon_section(memory: MemoryService, chat_id: int) -> tuple[str, list[str]] | None:
    """The terms seen most in this chat: term, count, status, meaning."""
    async with memory.db.read() as session:
        entries = await dictionary.list_entries(session, chat_id=chat_id, limit=12)
    if not entries:
        return None
    lines = []
    for e in entries:
        meaning = f" — {truncate(e.meaning, 60)}" if e.meaning else ""
        lines.append(f"{e.content} ×{e.count} [{e.status}]{meaning}")
    return "Jargon", lines


SECTIONS: list[SummarySection] = [people_section, jargon_section]


async def summarize(memory: MemoryService, sections: list[SummarySection] | None = None) -> list[ChatSummary]:
    async with memory.db.read() as session:
        rows = (
            await session.execute(
                select(Chat, func.count(Message.id))
                .join(Message, Message.chat_id == Chat.id, isouter=True)
                .group_by(Chat.id)
                .order_by(Chat.id)
            )
        ).all()
    summaries = []
    for chat, count in rows:
        name = chat.name or chat.platform_chat_id
        title = f"{name} ({chat.platform}:{chat.platform_chat_id}) — {count} messages"
        summary = ChatSummary(chat.id, title)
        for section in sections or SECTIONS:
            result = await section(memory, chat.id)
            if result is not None:
                summary.sections.append(result)
        summaries.append(summary)
    return summaries
