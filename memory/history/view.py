"""A chat's topics for people to read: packed ChatHistory rows and topics still in the cache."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.history.pack import histories
from memory.models import Message
from memory.text import truncate
from memory.topics import cache

SUMMARY_LINE_CHARS = 60


@dataclass(frozen=True, slots=True)
class TopicView:
    """One topic: `state` "history" (a ChatHistory row) or "cache" (still collecting)."""

    state: Literal["history", "cache"]
    id: int
    theme: str
    keywords: list[str]
    summary: str
    start: datetime
    end: datetime
    messages: int
    participants: list[str]
    count: int = 0
    forget_times: int = 0
    fragments: int = 0
    no_update_checks: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "id": self.id,
            "theme": self.theme,
            "keywords": self.keywords,
            "summary": self.summary,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "messages": self.messages,
            "participants": self.participants,
            "count": self.count,
            "forget_times": self.forget_times,
            "fragments": self.fragments,
            "no_update_checks": self.no_update_checks,
        }

    def line(self) -> str:
        """One line: true span, theme, keywords, summary, who took part, and count/stage or cache
        progress."""
        span = f"{self.start:%m-%d %H:%M}–{self.end:%m-%d %H:%M}"
        if self.end.date() == self.start.date():
            span = f"{self.start:%m-%d %H:%M}–{self.end:%H:%M}"
        keywords = ", ".join(self.keywords[:6])
        if self.state == "history":
            tail = f"count {self.count}, forget_times {self.forget_times}"
            gist = truncate(self.summary, SUMMARY_LINE_CHARS)
            people = f"{', '.join(self.participants)}; " if self.participants else ""
            return f"{span} {self.theme} [{keywords}] — {gist} ({people}{self.messages} msgs, {tail})"
        tail = f"{self.fragments} fragments, {self.no_update_checks} idle checks"
        return f"{span} (collecting) {self.theme} ({self.messages} msgs, {tail})"


async def _offset(session: AsyncSession, chat_id: int) -> timezone:
    minutes = (
        await session.execute(
            select(Message.utc_offset_minutes)
            .where(Message.chat_id == chat_id)
            .order_by(Message.id.desc())
            .limit(1)
        )
    ).scalar_one_or_none()
    return timezone(timedelta(minutes=minutes)) if minutes else UTC


async def topic_views(session: AsyncSession, chat_id: int, include_cache: bool = True) -> list[TopicView]:
    """A chat's topics in order of their first message, shown in the chat's latest UTC offset."""
    tz = await _offset(session, chat_id)

    def at(ts: float) -> datetime:
        return datetime.fromtimestamp(ts, tz)

    out = [
        TopicView(
            "history",
            row.id,
            row.theme,
            list(row.keywords),
            row.summary,
            at(row.start_time),
            at(row.end_time),
            len(row.source_message_ids),
            [str(p.get("name", "")) for p in row.participants if not p.get("is_bot")],
            row.count,
            row.forget_times,
        )
        for row in await histories(session, chat_id, limit=10_000)
    ]
    if include_cache:
        out.extend(
            TopicView(
                "cache",
                e.id,
                e.title,
                list(e.terms or {})[:6],
                "",
                at(e.first_time),
                at(e.last_time),
                len(e.message_ids),
                [],
                fragments=e.fragment_count,
                no_update_checks=e.no_update_checks,
            )
            for e in await cache.entries(session, chat_id)
        )
    return sorted(out, key=lambda v: (v.start, v.state, v.id))
