"""Members leaving and joining chats: a platform's `MembershipChange` applied to `chat_members.left_at`.

A membership is made by a member's first message in a chat (memory.ingest) and ends when the platform
says they left or were removed: `left_at` is then the time it gives. The platform's events may come out
of order, and an import brings old ones, so a leave dated before the member's last message in the chat
marks nothing (that message shows them still there; one from a wrong clock, dated more than
`WRONG_CLOCK_MARGIN` past now, shows nothing), and a later leave replaces an earlier one. A join dated
at or after the mark ends it, as does a message of theirs dated at or after it (memory.ingest). A change
for a chat or person memory has never seen does nothing: it makes no chat and no member.

Who is in a chat matters where memory crosses chats: `[recall] per_person_cross_chat` opens only the
chats a person is in (memory.recall.scope). Elsewhere a member who left is still found, marked as such:
what they said stays the chat's record.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from sqlalchemy import or_, select, union, update
from sqlalchemy.ext.asyncio import AsyncSession

from memory.clock import WRONG_CLOCK_MARGIN
from memory.models import Chat, ChatMember, ChatRedirect
from memory.persons.store import person_ids_for
from memory.storage.sql import json_values, rows_changed
from memory.types import MembershipChange


def folded_departure(left_ats: Iterable[float | None], last_seen: float) -> float | None:
    """When a membership folded from several (a chat merged into another, two accounts of a person
    merged) ended: the latest of their departures `left_ats` (None: still there), unless the folded
    membership's last message `last_seen` came after it, as a leave dated before it marks nothing."""
    departed = max((t for t in left_ats if t is not None), default=None)
    return departed if departed is not None and departed >= last_seen else None


async def chats_held(session: AsyncSession, platform: str, platform_chat_ids: Iterable[str]) -> list[int]:
    """The ids of the chats memory keeps these platform chats in: their own, or the chat one was merged
    into (memory.chat_merge); chats never recorded are left out."""
    keys = list(dict.fromkeys(platform_chat_ids))  # a Discord server's channels: hundreds
    own = select(Chat.id).where(Chat.platform == platform, Chat.platform_chat_id.in_(json_values(keys)))
    merged = select(ChatRedirect.chat_id).where(
        ChatRedirect.platform == platform, ChatRedirect.platform_chat_id.in_(json_values(keys))
    )
    return sorted(int(chat) for chat in (await session.scalars(union(own, merged))).all())


async def apply_change(session: AsyncSession, change: MembershipChange) -> int:
    """Apply `change` (see the module docstring); how many memberships it marked or unmarked."""
    person = (await person_ids_for(session, change.platform, [change.user_id])).get(change.user_id)
    chats = await chats_held(session, change.platform, change.chat_ids)
    if person is None or not chats:
        return 0
    when = change.time.timestamp()
    theirs = update(ChatMember).where(ChatMember.person_id == person, ChatMember.chat_id.in_(chats))
    if change.joined:
        stmt = theirs.where(ChatMember.left_at <= when).values(left_at=None)
    else:
        wrong_after = time.time() + WRONG_CLOCK_MARGIN.total_seconds()
        stmt = theirs.where(
            or_(ChatMember.last_seen <= when, ChatMember.last_seen > wrong_after),
            or_(ChatMember.left_at.is_(None), ChatMember.left_at < when),
        ).values(left_at=when)
    return rows_changed(await session.execute(stmt.execution_options(synchronize_session=False)))
