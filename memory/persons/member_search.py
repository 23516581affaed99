"""Finding members of a chat by what an admin types: a person id (`#12`), a platform user id, or part of a
name (the name the bot uses there, a nickname, a group card, an alias), a bounded number at a time."""

from __future__ import annotations

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import ChatMember, Person, PersonAccount, PersonAlias, PersonChatName
from memory.persons.names import name_key
from memory.storage.sql import stored_int

MAX_MATCHES = 10


def _bare(text: str) -> str:
    return text.strip().lstrip("#@").strip()


def _by_id(bare: str) -> list[ColumnElement[bool]]:
    """Conditions matching the member whose platform user id or person id `bare` is; the user id of an
    account merged into them (`PersonAccount`) is theirs too."""
    merged = select(PersonAccount.person_id).where(PersonAccount.platform_user_id == bare)
    matches: list[ColumnElement[bool]] = [Person.platform_user_id == bare, ChatMember.person_id.in_(merged)]
    if (person_id := stored_int(bare)) is not None:
        matches.append(ChatMember.person_id == person_id)
    return matches


async def _members(
    session: AsyncSession, chat_id: int, matches: list[ColumnElement[bool]], limit: int
) -> list[int]:
    """The person ids of at most `limit` members of the chat meeting one of `matches`, most active first."""
    rows = await session.scalars(
        select(ChatMember.person_id)
        .join(Person, Person.id == ChatMember.person_id)
        .where(ChatMember.chat_id == chat_id, or_(*matches))
        .order_by(ChatMember.message_count.desc(), ChatMember.person_id)
        .limit(limit)
    )
    return list(rows.all())


async def member_by_id(session: AsyncSession, chat_id: int, text: str) -> int | None:
    """The member of the chat whose platform user id or person id `text` is (`@`/`#` in front allowed),
    the most active one when both match someone; None when nobody does."""
    bare = _bare(text)
    found = await _members(session, chat_id, _by_id(bare), 1) if bare else []
    return found[0] if found else None


async def find_members(session: AsyncSession, chat_id: int, text: str, limit: int = MAX_MATCHES) -> list[int]:
    """The person ids of at most `limit` members of chat `chat_id` that `text` names (their id or user
    id, or a name containing it), most active first."""
    bare = _bare(text)
    if not bare:
        return []
    matches = _by_id(bare)
    key = name_key(bare)
    if key:
        named = select(PersonChatName.person_id).where(
            PersonChatName.chat_id == chat_id, PersonChatName.name_key.contains(key, autoescape=True)
        )
        aliased = select(PersonAlias.person_id).where(
            or_(PersonAlias.chat_id == chat_id, PersonAlias.chat_id.is_(None)),
            PersonAlias.alias_key.contains(key, autoescape=True),
        )
        matches += [ChatMember.person_id.in_(named), ChatMember.person_id.in_(aliased)]
    return await _members(session, chat_id, matches, limit)
