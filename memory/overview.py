"""Per-chat counts for admin overviews (the web console's index): one grouped query per table."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import (
    Chat,
    ChatHistory,
    ChatMember,
    ChatRedirect,
    DeletedMessage,
    JargonChatCount,
    Message,
    TopicCacheEntry,
)


@dataclass(frozen=True, slots=True)
class ChatOverview:
    """A chat with how much memory it holds."""

    id: int
    platform: str
    platform_chat_id: str
    name: str
    messages: int
    members: int
    topics: int
    cached_topics: int
    jargon: int
    merged_from: tuple[str, ...] = ()  # `platform:id` keys of the chats merged into it, now leading here
    deletion_marks: int = 0  # messages the platform said were deleted, kept out of any later import

    @property
    def only_deletion_marks(self) -> bool:
        """Whether the chat holds nothing but deletion marks: made by a deletion that came before
        anything of it was recorded (the bot had just joined), so a later import leaves that message out."""
        held = (self.messages, self.members, self.topics, self.cached_topics, self.jargon)
        return self.deletion_marks > 0 and not any(held)

    @property
    def key(self) -> str:
        """The stable `platform:id` key of the chat."""
        return f"{self.platform}:{self.platform_chat_id}"


async def _per_chat(session: AsyncSession, column: object, *where: object) -> dict[int, int]:
    query = select(column, func.count()).group_by(column)  # type: ignore[call-overload]
    for condition in where:
        query = query.where(condition)
    return {int(chat): int(n) for chat, n in (await session.execute(query)).all() if chat is not None}


async def chat_overviews(session: AsyncSession) -> list[ChatOverview]:
    """Every chat with its message, member, topic, cached-topic, jargon-term and deletion-mark counts
    and the keys of the chats merged into it, by id."""
    messages = await _per_chat(session, Message.chat_id)
    members = await _per_chat(session, ChatMember.chat_id)
    topics = await _per_chat(session, ChatHistory.chat_id)
    cached = await _per_chat(session, TopicCacheEntry.chat_id)
    jargon = await _per_chat(session, JargonChatCount.chat_id)
    marks = await _per_chat(session, DeletedMessage.chat_id)
    merged: dict[int, list[str]] = {}
    redirects = await session.execute(
        select(ChatRedirect.chat_id, ChatRedirect.platform, ChatRedirect.platform_chat_id).order_by(
            ChatRedirect.time, ChatRedirect.platform, ChatRedirect.platform_chat_id
        )
    )
    for chat_id, platform, platform_chat_id in redirects:
        merged.setdefault(chat_id, []).append(f"{platform}:{platform_chat_id}")
    chats = (await session.scalars(select(Chat).order_by(Chat.id))).all()
    return [
        ChatOverview(
            c.id,
            c.platform,
            c.platform_chat_id,
            c.name,
            messages.get(c.id, 0),
            members.get(c.id, 0),
            topics.get(c.id, 0),
            cached.get(c.id, 0),
            jargon.get(c.id, 0),
            tuple(merged.get(c.id, ())),
            marks.get(c.id, 0),
        )
        for c in chats
    ]
