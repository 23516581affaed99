"""What the playground page shows: the recent messages of each chat, bounded, read after a cursor.

Every message added gets the next number of one sequence shared by all chats; a page reads a chat's
messages with a number after the last one it has (its cursor). Each chat keeps its newest `keep`
messages, and at most `max_chats` chats are kept (the one idle longest is dropped first). A chat also
knows the members who posted in it (the `keep` most recently active), whose names an @ mentions.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from memory.types import ChatKind, ChatMessage


@dataclass(frozen=True, slots=True)
class Entry:
    """One message of a transcript and its place in the sequence."""

    seq: int
    message: ChatMessage

    def to_json(self) -> dict[str, Any]:
        """The message as the API sends it."""
        message = self.message
        return {
            "seq": self.seq,
            "id": message.message_id,
            "time": message.time.isoformat(),
            "sender_id": message.sender_id,
            "sender": message.display_name,
            "text": message.text,
            "is_bot": message.is_bot,
            "to_bot": message.to_bot,
            "reply_to": message.reply_to,
        }


@dataclass(slots=True)
class ChatLog:
    """The kept messages of one chat, oldest first."""

    kind: ChatKind
    entries: deque[Entry]
    dropped_through: int = 0  # the seq of the newest message dropped to stay within bounds
    by_id: dict[str, Entry] = field(default_factory=dict)
    members: OrderedDict[str, str] = field(default_factory=OrderedDict)  # name -> sender id


@dataclass(frozen=True, slots=True)
class Page:
    """A chat's messages after a cursor; `missed` when some of them were dropped before being read."""

    kind: ChatKind | None
    entries: list[Entry]
    cursor: int
    missed: bool


class Transcripts:
    """The bounded transcripts of every chat the playground has seen in this run."""

    def __init__(self, keep: int, max_chats: int) -> None:
        self.keep = keep
        self.max_chats = max_chats
        self._chats: OrderedDict[str, ChatLog] = OrderedDict()
        self._seq = 0

    @property
    def cursor(self) -> int:
        """The number of the newest message added."""
        return self._seq

    def kind_of(self, chat_id: str) -> ChatKind | None:
        """The kind the chat was first used as, or None for a chat not kept."""
        log = self._chats.get(chat_id)
        return log.kind if log is not None else None

    def find(self, chat_id: str, message_id: str) -> ChatMessage | None:
        """A kept message of the chat by its id."""
        log = self._chats.get(chat_id)
        entry = log.by_id.get(message_id) if log is not None else None
        return entry.message if entry is not None else None

    def members(self, chat_id: str) -> dict[str, str]:
        """The members who posted in the chat, by name (name -> sender id); none for a chat not kept."""
        log = self._chats.get(chat_id)
        return dict(log.members) if log is not None else {}

    def add(self, message: ChatMessage) -> Entry:
        """Append `message` to its chat's transcript (made with the message's kind when new)."""
        log = self._chats.get(message.chat_id)
        if log is None:
            log = self._chats[message.chat_id] = ChatLog(message.chat_kind, deque())
            while len(self._chats) > self.max_chats:
                self._chats.popitem(last=False)
        self._chats.move_to_end(message.chat_id)
        self._seq += 1
        entry = Entry(self._seq, message)
        log.entries.append(entry)
        log.by_id[message.message_id] = entry
        if not message.is_bot:
            log.members[message.sender_name] = message.sender_id
            log.members.move_to_end(message.sender_name)
            while len(log.members) > self.keep:
                log.members.popitem(last=False)
        while len(log.entries) > self.keep:
            dropped = log.entries.popleft()
            log.by_id.pop(dropped.message.message_id, None)
            log.dropped_through = dropped.seq
        return entry

    def after(self, chat_id: str, cursor: int) -> Page:
        """The kept messages of the chat numbered after `cursor` (all of them for a cursor past the
        newest number: one from an earlier run)."""
        if cursor > self._seq:
            cursor = 0
        log = self._chats.get(chat_id)
        if log is None:
            return Page(None, [], cursor, False)
        entries = [e for e in log.entries if e.seq > cursor]
        newest = entries[-1].seq if entries else cursor
        return Page(log.kind, entries, newest, cursor < log.dropped_through)

    def chats(self) -> list[tuple[str, ChatKind, int]]:
        """Every kept chat with its kind and the number of its newest message, most recent last."""
        return [
            (chat_id, log.kind, log.entries[-1].seq) for chat_id, log in self._chats.items() if log.entries
        ]
