"""Which chats a recall may read, and which chats keep their memory to themselves. One chat unless
config allows more: `global` mode (every chat not on the blacklist, private chats only with
`global_private`) or cross-chat recall for listed people (the chats they are members of, not those
they left: memory.membership)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import Chat, ChatMember, Person
from memory.types import ChatKind

ScopeMode = Literal["chat", "global"]


def is_listed(platform: str, ident: str, listed: Iterable[str]) -> bool:
    """Whether a config list of chats (or people) names this one, as `platform:id` or as the id alone."""
    names = set(listed)
    return f"{platform}:{ident}" in names or ident in names


@dataclass(frozen=True, slots=True)
class ScopePolicy:
    """`global_blacklist` names chats (`platform:chat_id` or the chat id alone) whose memory never
    leaves them and which see only themselves; `per_person_cross_chat` names people
    (`platform:user_id` or the user id alone) whose questions may read every chat they are in (not one
    they left or were removed from, until they join it again or write there).
    A private chat's memory stays in it unless `global_private` (what someone tells the bot alone is
    not for every group, nor for a group they talk in); it still reads the shared chats."""

    mode: ScopeMode = "chat"
    global_blacklist: tuple[str, ...] = ()
    per_person_cross_chat: tuple[str, ...] = ()
    global_private: bool = False

    async def chats_for(
        self, session: AsyncSession, chat_id: int, asker_person_id: int | None = None
    ) -> tuple[int, ...]:
        """The chat ids a question asked in `chat_id` (by `asker_person_id`) may recall from."""
        if self.mode == "chat" and not self.per_person_cross_chat:
            return (chat_id,)
        chats = {c.id: c for c in (await session.scalars(select(Chat))).all()}
        here = chats.get(chat_id)
        if here is None or self.blacklisted(here):
            return (chat_id,)
        shared = {cid for cid, c in chats.items() if not self.keeps_to_itself(c)}
        if self.mode == "global":
            return (chat_id, *sorted(shared - {chat_id}))
        if asker_person_id is None:
            return (chat_id,)
        person = await session.get(Person, asker_person_id)
        if person is None or not is_listed(
            person.platform, person.platform_user_id, self.per_person_cross_chat
        ):
            return (chat_id,)
        theirs = set(
            (
                await session.scalars(
                    select(ChatMember.chat_id).where(
                        ChatMember.person_id == asker_person_id, ChatMember.left_at.is_(None)
                    )
                )
            ).all()
        )
        return (chat_id, *sorted((theirs & shared) - {chat_id}))

    def blacklisted(self, chat: Chat) -> bool:
        """Whether `global_blacklist` names the chat."""
        return is_listed(chat.platform, chat.platform_chat_id, self.global_blacklist)

    def keeps_to_itself(self, chat: Chat) -> bool:
        """Whether the chat's memory never leaves it: a blacklisted chat, or a private chat unless
        `global_private`. No other chat's recall reads it (in "global" mode, nor for a person of
        `per_person_cross_chat`), and its slang stays in its own dictionary whatever the jargon scope
        (`kept_to_themselves`)."""
        return self.blacklisted(chat) or (chat.kind == ChatKind.PRIVATE and not self.global_private)

    async def kept_to_themselves(self, session: AsyncSession) -> set[int]:
        """The ids of the chats that `keeps_to_itself`."""
        return {c.id for c in (await session.scalars(select(Chat))).all() if self.keeps_to_itself(c)}
