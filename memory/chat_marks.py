"""What a process can tell of chat merges (memory.chat_merge) made since it last looked, by itself or by
another process (`qunyi chats merge` while the bot runs): for a job that read a chat, waited (on the
model, on offline work) and now writes, and for what is kept in memory per chat."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

from sqlalchemy import ScalarSelect, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import Chat, ChatRedirect

log = logging.getLogger(__name__)


def merge_count() -> ScalarSelect[Any]:
    """How many chat keys were ever merged into another, as a column: every merge adds one redirect
    and none is removed, so a process that saw a number saw every merge made until then."""
    return select(func.count()).select_from(ChatRedirect).scalar_subquery()


def merges_into(chat_id: int) -> ScalarSelect[Any]:
    """How many chat keys were merged into the chat, as a column to read with other values of it."""
    return select(func.count()).where(ChatRedirect.chat_id == chat_id).scalar_subquery()


async def merge_mark(session: AsyncSession, chat_id: int) -> int | None:
    """How many chat keys were merged into this chat (their redirects lead to it), or None when the
    chat is gone, merged into another. The number only grows while the chat exists, so what a process
    keeps computed from a chat's messages can tell that a merge, made by it or by another process,
    changed them."""
    found = await session.execute(select(merges_into(chat_id)).where(Chat.id == chat_id))
    value = found.scalar_one_or_none()
    return None if value is None else int(value)


async def merged_since(session: AsyncSession, chat_id: int, mark: int | None, job: str) -> bool:
    """Whether a merge changed the chat since its `merge_mark` was `mark` (read with a job's input).
    Called in the job's write transaction: when true the job writes nothing for the chat and reads it
    again at a later run, since another chat's messages were merged into it (not in what it read; its
    cursor must not pass over them), or it was merged into another (nothing may be written for it)."""
    if await merge_mark(session, chat_id) == mark:
        return False
    log.info("%s of chat %s: a chat merge changed it meanwhile; left for a later run", job, chat_id)
    return True


async def gone_chats(session: AsyncSession, chat_ids: Iterable[int]) -> set[int]:
    """Those of `chat_ids` that no longer exist (merged into another chat): what is kept in memory
    under their ids is never asked for again."""
    wanted = set(chat_ids)
    if not wanted:
        return set()
    found = await session.scalars(select(Chat.id).where(Chat.id.in_(wanted)))
    return wanted - set(found.all())


class ChatCache(Protocol):
    """Something kept in memory per chat (vectors, names, vocabularies) that a merge makes stale."""

    def forget_chats(self, chat_ids: Iterable[int]) -> None:
        """Drop what is held for these chats; their next use reads them again."""


class MergeWatch:
    """What a per-chat cache saw of chat merges. `gone` costs one count of the merges while none was
    made since it last looked; after one (by this process or another: `qunyi chats merge`) it names
    the cached chats that no longer exist, so they are dropped at the cache's next use, whichever chat
    it is used for."""

    def __init__(self) -> None:
        self._seen: int | None = None

    async def gone(self, session: AsyncSession, cached: Iterable[int]) -> set[int]:
        """Those of the `cached` chats merged away since the last call (none when no merge was made)."""
        count = int(await session.scalar(select(merge_count())) or 0)
        if count == self._seen:
            return set()
        gone = await gone_chats(session, cached)
        self._seen = count
        return gone
