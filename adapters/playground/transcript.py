"""What the playground page shows: the recent messages of each chat, bounded, read after a cursor.

Every message added gets the next number of one sequence shared by all chats; a page reads a chat's
messages with a number after the last one it has (its cursor). An edit gives its message the next
number (in its place in the chat), and a deletion takes the message out and leaves its id under the
next number, so a page that read the message learns of both. Each chat keeps its newest `keep`
messages (and `keep` deletions), and at most `max_chats` chats are kept (the one idle longest is
dropped first). A chat also
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
            "edited": message.edited,
            "forwarded": message.forwarded,
        }


@dataclass(slots=True)
class ChatLog:
    """The kept messages of one chat, oldest first, and the ids of those deleted."""

    kind: ChatKind
    entries: deque[Entry]
    dropped_through: int = 0  # the highest seq dropped (a message or deletion) to stay within bounds
    by_id: dict[str, Entry] = field(default_factory=dict)
    members: OrderedDict[str, str] = field(default_factory=OrderedDict)  # name -> sender id
    deleted: deque[tuple[int, str]] = field(default_factory=deque)  # (seq, message id)

    @property
    def newest(self) -> int:
        """The highest seq of a kept message or deletion (0: none)."""
        return max([e.seq for e in self.entries] + [seq for seq, _ in self.deleted], default=0)

    def drop_beyond(self, keep: int) -> None:
        """Drop the oldest messages and deletions beyond `keep` each."""
        while len(self.entries) > keep:
            dropped = self.entries.popleft()
            self.by_id.pop(dropped.message.message_id, None)
            self.dropped_through = max(self.dropped_through, dropped.seq)
        while len(self.deleted) > keep:
            self.dropped_through = max(self.dropped_through, self.deleted.popleft()[0])


@dataclass(frozen=True, slots=True)
class Page:
    """A chat's messages (new or edited) and deleted message ids after a cursor; `missed` when some
    of them were dropped before being read."""

    kind: ChatKind | None
    entries: list[Entry]
    cursor: int
    missed: bool
    deleted: list[str] = field(default_factory=list)


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
        log.drop_beyond(self.keep)
        return entry

    def replace(self, message: ChatMessage) -> Entry | None:
        """Put `message` (an edit) in the place of the kept message of its chat with its id, under
        the next number; None when there is no such message."""
        log = self._chats.get(message.chat_id)
        old = log.by_id.get(message.message_id) if log is not None else None
        if log is None or old is None:
            return None
        self._chats.move_to_end(message.chat_id)
        self._seq += 1
        entry = log.by_id[message.message_id] = Entry(self._seq, message)
        log.entries[log.entries.index(old)] = entry
        return entry

    def remove(self, chat_id: str, message_id: str) -> ChatMessage | None:
        """Take a kept message out of its chat, its id kept as deleted under the next number; the
        message, or None when there is no such message."""
        log = self._chats.get(chat_id)
        old = log.by_id.pop(message_id, None) if log is not None else None
        if log is None or old is None:
            return None
        self._chats.move_to_end(chat_id)
        self._seq += 1
        log.entries.remove(old)
        log.deleted.append((self._seq, message_id))
        log.drop_beyond(self.keep)
        return old.message

    def after(self, chat_id: str, cursor: int) -> Page:
        """The kept messages of the chat numbered after `cursor` (all of them for a cursor past the
        newest number: one from an earlier run)."""
        if cursor > self._seq:
            cursor = 0
        log = self._chats.get(chat_id)
        if log is None:
            return Page(None, [], cursor, False)
        entries = [e for e in log.entries if e.seq > cursor]  # in the chat's order
        deleted = [(seq, message_id) for seq, message_id in log.deleted if seq > cursor]
        newest = max([e.seq for e in entries] + [seq for seq, _ in deleted], default=cursor)
        missed = cursor < log.dropped_through
        return Page(log.kind, entries, newest, missed, [message_id for _, message_id in deleted])

    def chats(self) -> list[tuple[str, ChatKind, int]]:
        """Every kept chat with its kind and the number of its newest message or deletion, most
        recent last."""
        return [(chat_id, log.kind, log.newest) for chat_id, log in self._chats.items() if log.newest]
