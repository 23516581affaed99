"""A chat's members by nickname (nickname -> platform user id), as the web playground reads them for
every post and edit so that a typed `@name` mentions a member it knows from an earlier run; kept per
chat key for the chats used last (`memory.recent_chats`), since reading them walks every member of the
chat (about 0.1 s at 3,000 members).

What is kept is read again when it may have changed, never patched by guesswork:
- the chat's or the global name version moved (memory.persons.store.versions): a person merged or
  forgotten, a chat merged into this one, a name newly observed, or a person's nickname changed in any
  chat (a database trigger moves the global version, also for going back to a nickname they had
  before, which observes no new name), by this process or another one;
- the chat key leads to another chat (merged away by another process);
- this process recorded a message whose sender is not kept under the name it came with (a new member,
  a second member of a name now possibly the more active one) or deleted one (`MemoryService` calls
  `forget_chats`, as it does after a chat merge it made).
A read that began before such a change in this process keeps nothing (`mark`), so a cache filled from
an older snapshot never outlives the change.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from memory.directory import Member, members
from memory.ingest import Recorded
from memory.persons.store import versions
from memory.recent_chats import CHATS_HELD, drop_least_recent


def by_nickname(found: Iterable[Member]) -> dict[str, str]:
    """Nickname -> platform user id of `found` (most active first): the bot left out, and of members
    sharing a nickname the first (most active) one."""
    names: dict[str, str] = {}
    for member in found:
        if not member.is_bot and member.nickname:
            names.setdefault(member.nickname, member.platform_user_id)
    return names


@dataclass(frozen=True, slots=True)
class _Kept:
    chat_id: int
    version: tuple[int, int]  # the chat's and the global name version they were read at
    names: Mapping[str, str]


class ChatNicknames:
    """The nicknames of chats, kept per chat key (`platform`, `platform_chat_id`); a `ChatCache`."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, str], _Kept] = OrderedDict()
        self._changes = 0  # how many changes this process made that may touch kept names

    def mark(self) -> int:
        """Taken before a read's first query: what `names` keeps from that read, if nothing changed."""
        return self._changes

    async def names(
        self, session: AsyncSession, key: tuple[str, str], chat_id: int, mark: int
    ) -> dict[str, str]:
        """The nicknames of chat `chat_id`, which chat key `key` leads to, read in `session` unless
        those kept for `key` are still current; `mark` was taken before the session's first query."""
        version = await versions(session, chat_id)
        kept = self._kept.get(key)
        if kept is not None and (kept.chat_id, kept.version) == (chat_id, version):
            self._kept.move_to_end(key)
            return dict(kept.names)
        found = await members(session, chat_id)
        names = by_nickname(found)
        if mark == self._changes:  # else a change since this read began may be missing from it
            self._kept.pop(key, None)
            self._kept[key] = _Kept(chat_id, version, names)
            drop_least_recent(self._kept, CHATS_HELD)
        return dict(names)

    def recorded(self, recorded: Iterable[Recorded]) -> None:
        """After messages were recorded (committed): drop the names of each chat where a sender is not
        kept under the name they wrote with. A message of a member kept under that name changes none;
        a nickname changed in another chat moves the global name version."""
        said: dict[int, set[tuple[str, str]]] = {}
        for item in recorded:
            message = item.message
            if item.created and not message.is_bot:
                said.setdefault(item.chat_id, set()).add((message.sender_name, message.sender_id))
        self.forget_chats(chat_id for chat_id, senders in said.items() if not self._holds(chat_id, senders))

    def _holds(self, chat_id: int, senders: set[tuple[str, str]]) -> bool:
        kept = [k for k in self._kept.values() if k.chat_id == chat_id]
        return bool(kept) and all(k.names.get(name) == user for k in kept for name, user in senders)

    def forget_chats(self, chat_ids: Iterable[int]) -> None:
        """Drop the names kept for these chats (by database id), and keep nothing from a read already
        under way: their next read takes them from the database."""
        dropped = set(chat_ids)
        if dropped:
            self._changes += 1
            self._kept = OrderedDict(
                (key, kept) for key, kept in self._kept.items() if kept.chat_id not in dropped
            )
