"""Notes follow the QQ private chats that migration 0009 renamed (`qq:N` → `qq:private-N`).

The notes folder is named after the chat key, so after the rename a private chat's notes sat in the
folder of the bare key, where its own notes were not found and a later group N would have read them.
At start the folder moves to the new key, unless the bare key is a chat of its own again (a group N,
or a chat both had fed, which kept the bare name), the new key already has notes, or the bare key's
folder is one a chat merge left (a group N merged into another chat: it only names where its notes
went, and the private chat must not read that chat's notes).
"""

from __future__ import annotations

import logging

from sqlalchemy import select

from adapters.onebot_v11.event import PLATFORM, PRIVATE_CHAT_PREFIX
from memory.models import Chat
from memory.notes import NoteScopes
from memory.storage import Database

log = logging.getLogger(__name__)


async def move_renamed_private_chat_notes(db: Database, scopes: NoteScopes) -> int:
    """Move each renamed QQ private chat's notes folder to its new key; returns how many moved."""
    async with db.read() as session:
        query = select(Chat.platform_chat_id).where(Chat.platform == PLATFORM)
        ids = set((await session.scalars(query)).all())
    moved = 0
    for chat_id in sorted(ids):
        bare = chat_id.removeprefix(PRIVATE_CHAT_PREFIX)
        if bare == chat_id or bare in ids:
            continue
        if scopes.move_chat(f"{PLATFORM}:{bare}", f"{PLATFORM}:{chat_id}"):
            log.info("notes of %s:%s moved to its renamed chat %s:%s", PLATFORM, bare, PLATFORM, chat_id)
            moved += 1
    return moved
