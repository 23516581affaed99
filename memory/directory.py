"""Who is in a chat: members with their nickname, group card and activity."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import ChatMember, Person, PersonChatName


@dataclass(frozen=True, slots=True)
class Member:
    person_id: int
    platform_user_id: str
    name: str
    nickname: str
    card: str
    message_count: int
    first_seen: datetime
    last_seen: datetime
    is_bot: bool

    def to_json(self) -> dict[str, object]:
        return {
            "person_id": self.person_id,
            "user_id": self.platform_user_id,
            "name": self.name,
            "nickname": self.nickname,
            "card": self.card,
            "message_count": self.message_count,
            "first_seen": self.first_seen.isoformat(),
            "last_seen": self.last_seen.isoformat(),
        }


async def members(session: AsyncSession, chat_id: int) -> list[Member]:
    """The chat's members, most active first, each named as this chat knows them: the name the bot uses
    for them here, else their card here (never a name or card from another chat)."""
    in_chat = (PersonChatName.chat_id == chat_id) & (PersonChatName.person_id == Person.id)
    rows = await session.execute(
        select(Person, ChatMember, PersonChatName.person_name)
        .join(ChatMember, ChatMember.person_id == Person.id)
        .join(PersonChatName, in_chat, isouter=True)
        .where(ChatMember.chat_id == chat_id)
        .order_by(ChatMember.message_count.desc())
    )
    return [
        Member(
            person_id=person.id,
            platform_user_id=person.platform_user_id,
            name=chat_name or member.card or person.nickname or person.platform_user_id,
            nickname=person.nickname,
            card=member.card,
            message_count=member.message_count,
            first_seen=datetime.fromtimestamp(member.first_seen, UTC),
            last_seen=datetime.fromtimestamp(member.last_seen, UTC),
            is_bot=person.is_bot,
        )
        for person, member, chat_name in rows
    ]
