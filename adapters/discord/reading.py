"""What discord.py's events tell Qunyi: messages and their edits, deletions, and members leaving, banned
from or joining a server; for the Discord adapter and for Qunyi as a cog of a discord.py bot
(bot.hosts.discord_cog). Reads the objects' attributes; imports no discord.py.

Each reading takes the `client` the event came to (its user is the bot; its cache knows the servers)
and gives the events to hand Qunyi, in order: none for what Qunyi does not record.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Any

from adapters.discord.convert import PLATFORM, message_to_chat
from memory.clock import Clock
from memory.types import ChatKind, ChatMessage, MembershipChange, MessageDeletion

log = logging.getLogger(__name__)


class EventReader:
    """Reads the events of discord.py's listeners `on_message`, `on_raw_message_edit`,
    `on_raw_message_delete`, `on_raw_bulk_message_delete`, `on_raw_member_remove`, `on_member_ban` and
    `on_member_join`. Discord does not date a member's leaving: `clock` does."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    @staticmethod
    def message(client: Any, message: Any, *, edited: bool = False) -> list[ChatMessage]:
        """A message (the bot's own too, `is_bot`), marked `edited` for an edit; none for a system
        message (joins, pins…) or one that holds nothing."""
        user = client.user
        converted = message_to_chat(message, bot_id=user.id if user else 0)
        if converted is None:
            return []
        return [replace(converted, edited=True) if edited else converted]

    def edit(self, client: Any, payload: Any) -> list[ChatMessage]:
        """Any edit, of a cached message or not (Discord also sends one when a link preview appears:
        the text is then the same and nothing changes)."""
        return self.message(client, payload.message, edited=True)

    @staticmethod
    def deletion(payload: Any) -> list[MessageDeletion]:
        """A message deleted."""
        return _deleted(payload.channel_id, payload.guild_id, [payload.message_id])

    @staticmethod
    def bulk_deletion(payload: Any) -> list[MessageDeletion]:
        """Messages deleted at once (a moderator's purge), in the order they were sent."""
        return _deleted(payload.channel_id, payload.guild_id, payload.message_ids)

    def member_removed(self, client: Any, payload: Any) -> list[MembershipChange]:
        """A member left or was kicked or banned (told with the Server Members intent only)."""
        return _membership(client, payload.guild_id, payload.user.id, self.clock.now(), joined=False)

    def member_banned(self, client: Any, guild: Any, user: Any) -> list[MembershipChange]:
        """A member was banned (told with the default intents, also without the members one)."""
        return _membership(client, guild.id, user.id, self.clock.now(), joined=False)

    def member_joined(self, client: Any, member: Any) -> list[MembershipChange]:
        """A member joined (told with the Server Members intent only)."""
        when = member.joined_at or self.clock.now()
        return _membership(client, member.guild.id, member.id, when, joined=True)


def _deleted(channel_id: int, guild_id: int | None, message_ids: Iterable[int]) -> list[MessageDeletion]:
    kind = ChatKind.PRIVATE if guild_id is None else ChatKind.GROUP
    return [MessageDeletion(PLATFORM, str(channel_id), str(m), kind) for m in sorted(message_ids)]


def _membership(
    client: Any, guild_id: int, user_id: int, when: datetime, *, joined: bool
) -> list[MembershipChange]:
    """A member leaving or joining server `guild_id`: a server's members are those of every channel and
    thread in it, so the change names them all (those the client knows: its channels, and its threads
    not archived). The bot itself leaving says nothing of anyone else's membership."""
    what = "joined" if joined else "left"
    user = client.user
    if user is not None and user_id == user.id:
        log.info("the bot %s Discord server %s: memory keeps its channels as they were", what, guild_id)
        return []
    guild = client.get_guild(guild_id)
    chats = [] if guild is None else [c.id for c in (*guild.channels, *guild.threads)]
    if not chats:
        log.warning(
            "Discord member %s %s server %s, whose channels are unknown: not applied", user_id, what, guild_id
        )
        return []
    return [MembershipChange(PLATFORM, tuple(str(c) for c in chats), str(user_id), when, joined=joined)]
