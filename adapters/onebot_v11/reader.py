"""What the events a bot's QQ accounts receive through OneBot v11 become, and what is remembered of them.

A message event becomes the neutral `ChatMessage` with what the reader knows of its chat: the sender
and first words of the message a reply points to, the names members go by (for an `@` that carries
none), another account's copy of a group message left out. A recall or membership notice becomes its
neutral event. The chats are remembered too: the account that saw each (answers go through it) and
the group a temporary session came through.

Qunyi's own adapter (adapter.py) and the nonebot2 plugin (bot/hosts/nonebot) both read their events
here; each looks a reply's message up (`get_msg`) through its own connection.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import replace
from typing import Any, Generic, TypeVar

from adapters.neutral import as_id, holds_nothing, mapping_at
from adapters.onebot_v11.copies import AccountCopies
from adapters.onebot_v11.event import (
    BOT_REMOVED,
    MessageEvent,
    ReplyInfo,
    membership_notice,
    private_peer,
    recall_notice,
    to_chat_message,
)
from adapters.onebot_v11.message import reply_target, to_neutral
from memory.text import truncate
from memory.types import ChatKind, ChatMessage, InvalidMessage, MembershipChange, MessageDeletion

log = logging.getLogger(__name__)

_CACHE_SIZE = 4096
_QUOTE_CHARS = 60

GetMsg = Callable[[str], Awaitable[Any]]
"""The data of the `get_msg` answer for a message id; None when it could not be had (the failure is the
caller's to log)."""


V = TypeVar("V")


class _LRU(OrderedDict[str, V], Generic[V]):
    def remember(self, key: str, value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > _CACHE_SIZE:
            self.popitem(last=False)


class EventReader:
    """The events of one bot's QQ accounts, read one by one in the order they are handled.
    `resolve_replies`: look up (`get_msg`) the message a reply points to when it was not seen."""

    def __init__(self, *, resolve_replies: bool = True) -> None:
        self.resolve_replies = resolve_replies
        self._replies: _LRU[ReplyInfo] = _LRU()  # _reply_key -> the reply targets seen or sent
        self._names: _LRU[str] = _LRU()  # "_chat_key:user" -> display name, for @ segments without a name
        self._chat_owner: _LRU[str] = _LRU()  # _chat_key -> self id that saw it, to answer through it
        self._temp_groups: _LRU[str] = _LRU()  # private chat id -> group of its temporary session
        self._copies = AccountCopies()  # a group message each of several accounts receives is recorded once

    async def message(
        self,
        data: Mapping[str, Any],
        *,
        account: str | None,
        accounts: Collection[str],
        nickname: str,
        get_msg: GetMsg,
    ) -> ChatMessage | None:
        """The message a `message` or `message_sent` event received by `account` (the bot's QQ number;
        `nickname` its name, for an `@` of it) stands for; `accounts` are all of the bot's accounts.
        None, logged, for an event that is skipped: one that is no valid message, one that holds
        nothing, another account's copy of a message already read."""
        try:
            event = MessageEvent.from_dict(data)
        except InvalidMessage as exc:
            log.warning("OneBot message event skipped: %s", exc)
            return None
        reply = None
        target = reply_target(event.message)
        if target is not None:
            reply = await self._resolve_reply(event, target, account, get_msg)
        names = self._names_for(_chat_key(event.chat_kind, event.chat_id))
        if account is not None and nickname:
            names.setdefault(account, nickname)
        try:
            message = to_chat_message(event, self_id=account, reply=reply, names=names, accounts=accounts)
        except InvalidMessage as exc:  # what only the neutral message checks: a time before 1970
            log.warning("OneBot message event skipped: %s", exc)
            return None
        if holds_nothing(message.text):
            log.debug("OneBot message %s skipped: it holds nothing", message.message_id)
            return None
        if message.chat_kind is ChatKind.GROUP:
            chat, copier = _chat_key(message.chat_kind, message.chat_id), account or ""
            message = self._copies.replying_to_recorded(chat, copier, message)
            original = self._copies.copy_of(chat, copier, message, event.seq)
            if original is not None:
                log.debug(
                    "OneBot message %s skipped: bot %s's copy of %s", message.message_id, copier, original
                )
                return None
        self._remember(message)
        if account is not None:
            self._chat_owner.remember(_chat_key(message.chat_kind, message.chat_id), account)
        if event.message_type == "private" and not message.is_bot:
            self._note_temp_session(message.chat_id, event.temp_group)
        return message

    def notice(
        self, data: Mapping[str, Any], *, account: str, accounts: Collection[str]
    ) -> MessageDeletion | MembershipChange | None:
        """The deletion (a recall) or the membership change (a member leaving or joining a group) a
        notice received by `account` reports, with the message named by its recorded id. None, logged,
        for any other notice, a notice lacking its ids, and one of the bot's own `accounts` leaving or
        joining: that says nothing of anyone else's membership, and nobody is marked gone."""
        try:
            deletion = recall_notice(data)
            change = membership_notice(data) if deletion is None else None
        except InvalidMessage as exc:
            log.warning("OneBot notice skipped: %s", exc)
            return None
        if change is not None:
            sub_type = str(data.get("sub_type") or "")
            if sub_type == BOT_REMOVED or change.user_id in {account, *accounts}:
                log.log(
                    logging.INFO if change.joined else logging.WARNING,
                    "OneBot bot account %s %s group %s (%s): memory keeps the group as it was",
                    change.user_id,
                    change.what,
                    change.chat_ids[0],
                    sub_type or "no sub_type",
                )
                return None
            return change
        if deletion is None:
            log.debug("OneBot %s notice ignored", data.get("notice_type"))
            return None
        if deletion.chat_kind is ChatKind.GROUP:  # `account`'s id of a message recorded as another's copy
            chat = _chat_key(deletion.chat_kind, deletion.chat_id)
            deletion = replace(
                deletion, message_id=self._copies.recorded_id(chat, account, deletion.message_id)
            )
        self._replies.pop(_reply_key(deletion.chat_kind, deletion.chat_id, deletion.message_id), None)
        return deletion

    def sent(self, message: ChatMessage) -> ChatMessage:
        """`message`, sent by the bot's account `message.sender_id`, as it is recorded: under the id of
        another account's event for it when that came first."""
        if message.chat_kind is ChatKind.GROUP:
            chat = _chat_key(message.chat_kind, message.chat_id)
            original = self._copies.copy_of(chat, message.sender_id, message)
            if original is not None:
                message = replace(message, message_id=original)
        self._remember(message)
        return message

    def owner(self, kind: ChatKind, chat_id: str) -> str | None:
        """The bot account that last saw the chat, to answer through."""
        return self._chat_owner.get(_chat_key(kind, chat_id))

    def temp_group(self, chat_id: str) -> str | None:
        """The group the temporary session `chat_id` (a private chat) came through; None for a friend's."""
        return self._temp_groups.get(chat_id)

    def _note_temp_session(self, chat_id: str, group: str | None) -> None:
        """Remember the group a temporary session with `chat_id` came through (None: a friend's chat)."""
        if group is not None:
            self._temp_groups.remember(chat_id, group)
        else:
            self._temp_groups.pop(chat_id, None)

    def _names_for(self, chat: str) -> dict[str, str]:
        prefix = f"{chat}:"
        return {k[len(prefix) :]: v for k, v in self._names.items() if k.startswith(prefix)}

    def _remember(self, message: ChatMessage) -> None:
        key = _reply_key(message.chat_kind, message.chat_id, message.message_id)
        self._replies.remember(key, ReplyInfo(message.sender_id, _quote(message.text)))
        chat = _chat_key(message.chat_kind, message.chat_id)
        self._names.remember(f"{chat}:{message.sender_id}", message.display_name)

    async def _resolve_reply(
        self, event: MessageEvent, target: str, account: str | None, get_msg: GetMsg
    ) -> ReplyInfo | None:
        key = _reply_key(event.chat_kind, event.chat_id, target)
        known = self._replies.get(key)
        if known is not None:
            return known
        if not self.resolve_replies:
            return None
        data = await get_msg(target)
        if not isinstance(data, Mapping) or _from_another_chat(data, event, account):
            return None
        sender = mapping_at(data, "sender")
        sender_id = as_id(data.get("user_id")) or as_id(sender.get("user_id"))
        try:
            text = to_neutral(data.get("message", data.get("raw_message", ""))).text
        except InvalidMessage:
            text = ""
        info = ReplyInfo(sender_id, _quote(text))
        self._replies.remember(key, info)
        return info


def _from_another_chat(data: Mapping[str, Any], event: MessageEvent, self_id: str | None) -> bool:
    """Whether a `get_msg` answer is a message of a chat other than the one of `event` (an id that
    recurs in another chat, or a forged reply): its text must not be quoted here. A message of the
    other kind is another chat's: a private one in a group (it names no group, or, from a temporary
    session, the group it came through), a group's in a private chat. An answer naming no chat is taken
    as this chat's; in a private chat only the other party and the bot (`self_id`) speak."""
    kind = data.get("message_type")
    if kind in ("group", "private") and kind != event.message_type:
        return True
    group = as_id(data.get("group_id"))
    if event.message_type == "group":
        return group is not None and group != event.group_id
    sender = as_id(data.get("user_id")) or as_id(mapping_at(data, "sender").get("user_id"))
    private = private_peer(event.chat_id)
    return group is not None or (sender is not None and sender not in (private, self_id))


def _chat_key(kind: ChatKind, chat_id: str) -> str:
    """A chat in the reader's caches: group 123 and the private chat with user 123 are two chats."""
    return f"{kind.value}:{chat_id}"


def _reply_key(kind: ChatKind, chat_id: str, message_id: str) -> str:
    """The reply cache key: a message id names a message only within its chat (implementations number
    messages per chat or per account, so the same id recurs in other chats)."""
    return f"{_chat_key(kind, chat_id)}:{message_id}"


def _quote(text: str) -> str:
    return truncate(text, _QUOTE_CHARS) if text else ""
