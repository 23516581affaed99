"""What Telegram's updates tell Qunyi: the events of a `message` or `edited_message` update and of a
`chat_member` update, for the Telegram adapter and for Qunyi inside an aiogram bot (bot.hosts.aiogram).
Works on aiogram's objects' attributes; imports no aiogram.

An update Qunyi cannot take (a date before 1970, a service message that holds nothing to record) is
logged and passed over: it tells no event.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from adapters.telegram.convert import PLATFORM, member_update, membership_changes, message_to_chat
from memory.types import ChatMoved, InboundEvent, InvalidMessage

if TYPE_CHECKING:
    from aiogram.types import ChatMemberUpdated, Message

log = logging.getLogger(__name__)

ALLOWED_UPDATES = ["message", "edited_message", "chat_member"]
"""The update types Qunyi reads. chat_member (members leaving, removed or joining) is sent only to a bot
that is an admin of the group, and only when asked for; the service messages in `message` tell most of
the same to any bot."""


def message_events(
    message: Message,
    *,
    bot_id: int,
    bot_username: str | None,
    edited: bool = False,
    follow_upgrade: bool = True,
) -> Iterator[InboundEvent]:
    """The events `message` tells, in order, each made when the one before has been handled: the chat
    moved to a new id (a group upgraded to a supergroup, with `follow_upgrade`), the members who left or
    joined (service messages), and the message itself (marked `edited` for an `edited_message`)."""
    yield from _upgrade(message, follow_upgrade)
    yield from _members_changed(message, bot_id)
    try:
        converted = message_to_chat(message, bot_id=bot_id, bot_username=bot_username)
    except InvalidMessage as exc:  # a date before 1970
        log.warning("Telegram message %s in %s skipped: %s", message.message_id, message.chat.id, exc)
        return
    if converted is None:
        log.debug(
            "Telegram message %s in %s ignored: a service message, or it holds nothing",
            message.message_id,
            message.chat.id,
        )
        return
    yield replace(converted, edited=True) if edited else converted


def chat_member_events(updated: ChatMemberUpdated, *, bot_id: int) -> Iterator[InboundEvent]:
    """The member a `chat_member` update says left or joined the group (sent to a bot that is an admin
    of it), if any: a service message may tell the same again, which then changes nothing."""
    try:
        change = member_update(updated, bot_id=bot_id)
    except InvalidMessage as exc:  # a date before 1970
        log.warning("Telegram chat_member update in %s skipped: %s", updated.chat.id, exc)
        return
    if change is not None:
        yield change


def _upgrade(message: Message, follow: bool) -> Iterator[ChatMoved]:
    """A group upgraded to a supergroup: Telegram says so in both chats (`migrate_to_chat_id` in the
    group, `migrate_from_chat_id` in the supergroup). The move is told each time (with `follow`); the
    second notice finds nothing left to move."""
    if message.migrate_to_chat_id is not None:
        old, new = message.chat.id, message.migrate_to_chat_id
        log.warning(
            "Telegram group %s was upgraded to supergroup %s: its talk is recorded as chat telegram:%s "
            "from now on, and what was remembered %s",
            old,
            new,
            new,
            "moves there" if follow else f"stays with chat telegram:{old}",
        )
    elif message.migrate_from_chat_id is not None:
        old, new = message.migrate_from_chat_id, message.chat.id
    else:
        return
    if follow:
        yield ChatMoved(PLATFORM, str(old), str(new))


def _members_changed(message: Message, bot_id: int) -> Iterator[InboundEvent]:
    """A service message of members leaving (`left_chat_member`) or joining (`new_chat_members`), which
    Telegram posts to every bot in the group, admin or not. The bot itself removed is logged: it says
    nothing of anyone else's membership."""
    gone = message.left_chat_member
    if gone is not None and gone.id == bot_id:
        log.warning(
            "the bot was removed from Telegram chat %s: memory keeps the chat as it was", message.chat.id
        )
    try:
        changes = membership_changes(message, bot_id=bot_id)
    except InvalidMessage as exc:  # a date before 1970
        log.warning("Telegram service message %s in %s skipped: %s", message.message_id, message.chat.id, exc)
        return
    yield from changes
