"""The one way in: recording ChatMessages into the raw store, idempotently and race-free."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import groupby
from operator import itemgetter
from typing import Protocol, runtime_checkable

from sqlalchemy import insert, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.clock import WRONG_CLOCK_MARGIN
from memory.commands import asks_memory
from memory.embeddings.store import drop_vectors
from memory.message_ids import NEXT_CHAT_ID_SQL, next_message_id
from memory.message_removal import deleted_among, erase_messages
from memory.models import ChatRedirect, Message
from memory.storage import Database
from memory.storage.fts import index_rows
from memory.storage.sql import json_values
from memory.turn_windows import refresh_windows
from memory.types import ChatMessage


@dataclass(frozen=True, slots=True)
class Recorded:
    """A message as stored: database ids and whether this call created it. `clash`: not created because
    its id was already taken in the chat by a message with another text (the first is kept). `erased`:
    not created (ids 0) because its sender asked for their messages up to then to be deleted.
    `message` is as stored: its ids prefixed when its chat was merged into another (`ChatTarget`).
    `first_id`: for an edited version (`ChatMessage.edited`), the id its first version was recorded
    under (`Message.first_id`); None for a message that is no edit."""

    message_id: int
    chat_id: int
    person_id: int
    created: bool
    message: ChatMessage
    clash: bool = False
    erased: bool = False  # not recorded: its sender had their messages up to its time deleted on request
    first_id: int | None = None


@dataclass(slots=True)
class BatchReport:
    created: int = 0
    duplicates: int = 0
    erased: int = 0  # not recorded: sent before their sender's messages were deleted on request
    clashes: list[ChatMessage] = field(default_factory=list)  # not recorded: their ids held other text
    recorded: list[Recorded] = field(default_factory=list)


RecordObserver = Callable[[AsyncSession, Recorded], Awaitable[None]]
"""Called inside the record transaction with each newly created message, in recording order. The
batch's messages are in the database by then, their full-text rows (`messages_fts`) only at the end of
the batch (`_BatchWriter.finish`): an observer must not read that index."""


@runtime_checkable
class SelectiveObserver(Protocol):
    """A `RecordObserver` that can tell, without the database, that a message gives it nothing to do;
    the batch path then sends its held writes only for the messages that do (`_BatchWriter`)."""

    async def __call__(self, session: AsyncSession, recorded: Recorded) -> None: ...

    async def wants(self, session: AsyncSession, recorded: Recorded) -> bool:
        """False only when calling the observer with `recorded` would do nothing at all. It must not
        touch the database: the batch's latest writes may not be in it yet."""
        ...


def _ts(message: ChatMessage) -> float:
    return message.time.timestamp()


def _offset_minutes(message: ChatMessage) -> int:
    offset = message.time.utcoffset()
    return int(offset.total_seconds() // 60) if offset else 0


_UPSERT_CHAT = text(
    "INSERT INTO chats (id, platform, platform_chat_id, kind, name, created_at) "
    f"VALUES ({NEXT_CHAT_ID_SQL}, :platform, :chat, :kind, :name, :ts) "
    "ON CONFLICT (platform, platform_chat_id) DO UPDATE SET "
    "name = CASE WHEN excluded.name != '' THEN excluded.name ELSE chats.name END "
    "RETURNING id"
)
# A last_seen from a wrong clock (`from_wrong_clock`), held as the newest time, would keep every later
# name out, so the newest-arriving name wins then.
_WRONG_CLOCK_AFTER = f"CAST(strftime('%s', 'now') AS REAL) + {WRONG_CLOCK_MARGIN.total_seconds():.0f}"
# How a message updates its sender's person: {nickname}, {ts}, {is_bot} are the message's values, as
# `excluded` columns in the upsert or as parameters in the plain update.
_PERSON_SET = (
    "nickname = CASE WHEN {nickname} != '' AND (persons.nickname = '' "
    f"OR {{ts}} >= persons.last_seen OR persons.last_seen > {_WRONG_CLOCK_AFTER}) "
    "AND NOT EXISTS (SELECT 1 FROM person_forgotten f "
    "WHERE f.person_id = persons.id AND f.time >= {ts}) "
    "THEN {nickname} ELSE persons.nickname END, "
    "first_seen = min(persons.first_seen, {ts}), "
    "last_seen = max(persons.last_seen, {ts}), "
    # an account first seen in an import or as another client's message is the bot's once it sends as it
    "is_bot = persons.is_bot OR {is_bot}, "
    "message_count = persons.message_count + 1"
)
_UPSERT_PERSON_SQL = (
    "INSERT INTO persons "
    "(platform, platform_user_id, nickname, is_bot, first_seen, last_seen, message_count) "
    "VALUES (:platform, :user, :nickname, :is_bot, :ts, :ts, 1) "
    "ON CONFLICT (platform, platform_user_id) DO UPDATE SET "
    + _PERSON_SET.format(nickname="excluded.nickname", ts="excluded.last_seen", is_bot="excluded.is_bot")
)
# A person already made is updated without the upsert: SQLite's AUTOINCREMENT uses up an id at every
# upsert that turns into an update, so ids would grow with the messages, not with the people.
_UPDATE_PERSON_SQL = (
    f"UPDATE persons SET {_PERSON_SET.format(nickname=':nickname', ts=':ts', is_bot=':is_bot')} "
    "WHERE platform = :platform AND platform_user_id = :user"
)
_MERGED_ACCOUNT_SQL = (
    "UPDATE persons SET first_seen = min(first_seen, :ts), last_seen = max(last_seen, :ts), "
    "message_count = message_count + 1 WHERE id = (SELECT person_id FROM person_accounts "
    "WHERE platform = :platform AND platform_user_id = :user)"
)
# Each with and without the row id: a batch sends the later messages of a sender it already knows
# together (`_HeldWrites`), and an executemany returns no rows.
_UPDATE_PERSON = text(_UPDATE_PERSON_SQL)
_UPDATE_PERSON_ID = text(_UPDATE_PERSON_SQL + " RETURNING id")
_UPSERT_PERSON_ID = text(_UPSERT_PERSON_SQL + " RETURNING id")
_MERGED_ACCOUNT = text(_MERGED_ACCOUNT_SQL)
_MERGED_ACCOUNT_ID = text(_MERGED_ACCOUNT_SQL + " RETURNING id")
# When the sender asked to be forgotten (their account's person, or the person it was merged into),
# if ever, and up to when their messages were deleted then.
_FORGOTTEN = text(
    "SELECT time, messages_removed_until FROM person_forgotten WHERE person_id = coalesce("
    "(SELECT person_id FROM person_accounts WHERE platform = :platform AND platform_user_id = :user), "
    "(SELECT id FROM persons WHERE platform = :platform AND platform_user_id = :user))"
)
_UPSERT_MEMBER = text(
    "INSERT INTO chat_members (chat_id, person_id, card, first_seen, last_seen, message_count) "
    "VALUES (:chat_id, :person_id, :card, :ts, :ts, 1) "
    "ON CONFLICT (chat_id, person_id) DO UPDATE SET "
    "card = CASE WHEN excluded.card != '' AND (chat_members.card = '' "
    "OR excluded.last_seen >= chat_members.last_seen "
    f"OR chat_members.last_seen > {_WRONG_CLOCK_AFTER}) "
    "AND NOT EXISTS (SELECT 1 FROM person_forgotten f "
    "WHERE f.person_id = chat_members.person_id AND f.time >= excluded.last_seen) "
    "THEN excluded.card ELSE chat_members.card END, "
    "first_seen = min(chat_members.first_seen, excluded.first_seen), "
    "last_seen = max(chat_members.last_seen, excluded.last_seen), "
    "message_count = chat_members.message_count + 1, "
    # a member who left and wrote again is back; a message older than their leaving (imported history)
    # does not bring them back (memory.membership)
    "left_at = CASE WHEN chat_members.left_at <= excluded.last_seen THEN NULL ELSE chat_members.left_at END"
)
# Platforms often omit names: an empty nickname, card or chat name means unknown, not cleared.
# A message older than the newest one seen (imported history) does not bring back an old name, nor
# does one from before its sender asked to be forgotten.
# Each upsert is one statement returning the row id, so concurrent writers cannot create duplicates.


@dataclass(frozen=True, slots=True)
class ChatTarget:
    """Where what arrives under a platform chat key is stored: chat `chat_id`, with the platform's
    message ids prefixed by `prefix` (empty unless the key's chat was merged into another, see
    memory.chat_merge, which prefixed the ids it moved alike)."""

    chat_id: int
    prefix: str = ""

    def stored(self, message: ChatMessage) -> ChatMessage:
        """`message` with its own and its reply's ids as they are stored in the chat."""
        if not self.prefix:
            return message
        reply_to = None if message.reply_to is None else self.prefix + message.reply_to
        return replace(message, message_id=self.prefix + message.message_id, reply_to=reply_to)


async def chat_target(
    session: AsyncSession, platform: str, platform_chat_id: str, kind: str, name: str, when: float
) -> ChatTarget:
    """Where chat `platform:platform_chat_id` is stored: the chat it was merged into, else its own row,
    made with `kind`, `name` and `when` if new (a non-empty name replaces the stored one)."""
    redirect = await redirected_chat(session, platform, platform_chat_id)
    if redirect is not None:
        return redirect
    return ChatTarget(await upsert_chat_row(session, platform, platform_chat_id, kind, name, when))


async def redirected_chat(session: AsyncSession, platform: str, platform_chat_id: str) -> ChatTarget | None:
    """The chat that chat `platform:platform_chat_id` was merged into (with its message-id prefix), if
    it was."""
    redirect = (
        await session.execute(
            select(ChatRedirect.chat_id, ChatRedirect.prefix).where(
                ChatRedirect.platform == platform, ChatRedirect.platform_chat_id == platform_chat_id
            )
        )
    ).first()
    return None if redirect is None else ChatTarget(redirect.chat_id, redirect.prefix)


async def upsert_chat_row(
    session: AsyncSession, platform: str, platform_chat_id: str, kind: str, name: str, when: float
) -> int:
    """The id of chat `platform:platform_chat_id`, made with `kind`, `name` and `when` if new."""
    params = {"platform": platform, "chat": platform_chat_id, "kind": kind, "name": name, "ts": when}
    return int((await session.execute(_UPSERT_CHAT, params)).scalar_one())


def _person_params(message: ChatMessage) -> dict[str, object]:
    return {
        "platform": message.platform,
        "user": message.sender_id,
        "nickname": message.sender_name,
        "is_bot": message.is_bot,
        "ts": _ts(message),
    }


async def _upsert_person(session: AsyncSession, message: ChatMessage) -> tuple[int, bool]:
    """The sender's person id, and whether it is that of the person the account was merged into (else
    the account's own person, created on its first message)."""
    params = _person_params(message)
    merged_into = (await session.execute(_MERGED_ACCOUNT_ID, params)).scalar_one_or_none()
    if merged_into is not None:
        return int(merged_into), True
    known = (await session.execute(_UPDATE_PERSON_ID, params)).scalar_one_or_none()
    if known is not None:
        return int(known), False
    return int((await session.execute(_UPSERT_PERSON_ID, params)).scalar_one()), False


def _member_params(chat_id: int, person_id: int, message: ChatMessage) -> dict[str, object]:
    return {"chat_id": chat_id, "person_id": person_id, "card": message.sender_card, "ts": _ts(message)}


def _message_values(
    chat_id: int, person_id: int, message: ChatMessage, first_id: int | None
) -> dict[str, object]:
    return {
        "chat_id": chat_id,
        "platform_message_id": message.message_id,
        "person_id": person_id,
        "sender_name": message.sender_name,
        "sender_card": message.sender_card,
        "text": message.text,
        "segments": [segment.to_json() for segment in message.segments],
        "reply_to": message.reply_to,
        "mentions": list(message.mentions),
        "time": _ts(message),
        "utc_offset_minutes": _offset_minutes(message),
        "is_bot": message.is_bot,
        "to_bot": message.to_bot,
        "forwarded": message.forwarded,
        "first_id": first_id,
    }


@dataclass(frozen=True, slots=True)
class _StoredRow:
    """What recording needs of a message already stored under a (chat, platform message id)."""

    id: int
    person_id: int | None
    text: str
    forwarded: bool
    first_id: int | None  # `Message.first_id`


@dataclass(slots=True)
class _Sender:
    """What a batch knows of a sender after their first message in it. `forgotten_at` (when they asked
    to be forgotten) and `erased_until` are read again after their person is first upserted, which may
    have made it; they stay put for the rest of the batch (accounts are merged and people forgotten
    only by an admin, in transactions of their own)."""

    forgotten_at: float | None = None
    erased_until: float | None = None
    erased_read: bool = False
    person_id: int | None = None
    merged: bool = False  # `person_id` is that of the person the account was merged into


@dataclass(slots=True)
class _HeldWrites:
    """Writes a batch holds back to send together, one executemany per statement. None of these
    statements reads a table another of them writes (besides them, only `person_forgotten`, which
    recording never changes, and the rows their foreign keys name, which exist before any is held),
    and each table's rows go in recording order, so sending them later, grouped by table, leaves every
    table as sending them one by one would. The full-text rows (`searchable`) may stay held longer
    than the others (`send(index=False)`): only erasing a message and the turn windows read that
    index, and both send them first."""

    persons: list[tuple[bool, dict[str, object]]] = field(default_factory=list)  # (merged, params)
    members: list[dict[str, object]] = field(default_factory=list)
    messages: list[dict[str, object]] = field(default_factory=list)
    searchable: list[tuple[int, str]] = field(default_factory=list)  # (message id, text) to index

    async def send(self, session: AsyncSession, index: bool = True) -> None:
        """Execute and forget every held write (the full-text rows only with `index`: tokenized and
        inserted a few times per batch rather than before every observer); first, what an observer or
        an erasure left pending in the ORM session, which one message at a time went out with the next
        message's first query."""
        await session.flush()
        for merged, run in groupby(self.persons, key=itemgetter(0)):
            await session.execute(
                _MERGED_ACCOUNT if merged else _UPDATE_PERSON, [params for _, params in run]
            )
        if self.members:
            await session.execute(_UPSERT_MEMBER, self.members)
        if self.messages:
            # render_nulls: one executemany; else the ORM groups the rows by which values are None.
            await session.execute(insert(Message).execution_options(render_nulls=True), self.messages)
        self.persons, self.members, self.messages = [], [], []
        if index and self.searchable:
            await index_rows(session, "messages_fts", self.searchable)
            self.searchable = []


class _BatchWriter:
    """Records the messages of one batch, in order, inside its transaction.

    The result is that of recording them one at a time: what a message's outcome depends on (its
    stored row, its sender's erasure and person) is read once per batch and kept up to date here, and
    the routine writes of a message (`_HeldWrites`) are held back and sent together. Every other
    statement, and every observer that has something to do, runs after they were sent
    (`immediate`), so it meets the database exactly as it would have one message at a time.
    """

    def __init__(self, session: AsyncSession, observers: Sequence[RecordObserver], searchable: bool) -> None:
        self.session = session
        self.searchable = searchable
        self.held = _HeldWrites()
        self.stored: dict[tuple[int, str], _StoredRow] = {}  # by (chat id, platform message id)
        self.senders: dict[tuple[str, str], _Sender] = {}  # by (platform, platform user id)
        self.next_id: int | None = None  # the id the next new message gets, once known
        # Each observer with the check it offers, looked up once: a Protocol isinstance is slow.
        self.checks = [(observer, _check_of(observer)) for observer in observers]

    async def immediate(self, index: bool = True) -> AsyncSession:
        """The session, once the held writes were sent: for any statement that is not held back
        (`index=False`: one that does not read `messages_fts`, which may then stay held)."""
        await self.held.send(self.session, index)
        return self.session

    async def open_chat(
        self, message: ChatMessage, batch: Sequence[ChatMessage]
    ) -> tuple[ChatTarget, set[str]]:
        """Where the batch's messages under `message`'s chat key go, and which of their ids the
        platform said were deleted; reads the rows already stored under those ids."""
        session = await self.immediate()
        key = (message.platform, message.chat_id)
        target = await chat_target(session, *key, message.chat_kind.value, message.chat_name, _ts(message))
        ids = [target.prefix + m.message_id for m in batch if (m.platform, m.chat_id) == key]
        found = await session.execute(
            select(
                Message.platform_message_id,
                Message.id,
                Message.person_id,
                Message.text,
                Message.forwarded,
                Message.first_id,
            ).where(Message.chat_id == target.chat_id, Message.platform_message_id.in_(json_values(ids)))
        )
        for row in found:
            self.stored[(target.chat_id, row.platform_message_id)] = _StoredRow(
                row.id, row.person_id, row.text, row.forwarded, row.first_id
            )
        return target, await deleted_among(session, target.chat_id, ids)

    async def record(self, chat_id: int, message: ChatMessage, deleted: set[str]) -> Recorded:
        """Record one message of the batch; `deleted`: the batch's ids in the chat said deleted."""
        key = (chat_id, message.message_id)
        row = self.stored.get(key)
        first_id: int | None = None
        if row is not None:
            if not (message.edited and row.text != message.text):
                return Recorded(row.id, chat_id, row.person_id or 0, False, message, row.text != message.text)
            # The stored version goes with what was learnt from it (its sender's count too); the new
            # one is recorded as a message of its own, which every job reads afresh and counts again.
            await self._erase(key, row.id)
            # It is the same message: it counts as recorded when its first version was (a request to
            # be forgotten tells what was said before it by that, memory.persons.forgotten).
            first_id = row.id if row.first_id is None else row.first_id
            if row.forwarded:  # an edit changes what a forward says, never whose words they are
                message = replace(message, forwarded=True)
        elif message.message_id in deleted:
            return Recorded(0, chat_id, 0, False, message, erased=True)
        sender = await self._sender(message)
        if sender.erased_until is not None and _ts(message) <= sender.erased_until:
            return Recorded(0, chat_id, 0, False, message, erased=True)
        if sender.forgotten_at is not None and _ts(message) <= sender.forgotten_at:
            # from before they asked to be forgotten: kept without the names it was sent under
            message = replace(message, sender_name="", sender_card="")
        person_id = await self._person_seen(sender, message)
        self.held.members.append(_member_params(chat_id, person_id, message))
        message_id = await self._insert(_message_values(chat_id, person_id, message, first_id))
        self.stored[key] = _StoredRow(message_id, person_id, message.text, message.forwarded, first_id)
        if self.searchable and not asks_memory(message):
            self.held.searchable.append((message_id, message.text))
        recorded = Recorded(message_id, chat_id, person_id, True, message, first_id=first_id)
        await self._observe(recorded)
        return recorded

    async def finish(self, created: Sequence[int]) -> None:
        """After the last message: send what is held, then index the new messages' turn windows."""
        session = await self.immediate()
        changed = await refresh_windows(session, created)
        # A message is embedded with its turn window: a neighbour's new window needs a new vector.
        await drop_vectors(session, "message", changed)

    async def _erase(self, key: tuple[int, str], message_id: int) -> None:
        session = await self.immediate()
        await erase_messages(session, [message_id], time.time())
        del self.stored[key]
        self.next_id = None  # the next id is read again (`_insert`), past the floor the erasure kept

    async def _sender(self, message: ChatMessage) -> _Sender:
        sender = self.senders.setdefault((message.platform, message.sender_id), _Sender())
        if not sender.erased_read:
            # No held write makes or removes a person or account, or touches `person_forgotten`:
            # what this reads is the same before or after sending them.
            params = {"platform": message.platform, "user": message.sender_id}
            found = (await self.session.execute(_FORGOTTEN, params)).first()
            sender.forgotten_at, sender.erased_until = (None, None) if found is None else found
            sender.erased_read = True
        return sender

    async def _person_seen(self, sender: _Sender, message: ChatMessage) -> int:
        """Count the message to its sender's person (made on their first message) and return its id."""
        if sender.person_id is None:
            session = await self.immediate(index=False)
            sender.person_id, sender.merged = await _upsert_person(session, message)
            sender.erased_read = False
        else:
            self.held.persons.append((sender.merged, _person_params(message)))
        return sender.person_id

    async def _insert(self, values: dict[str, object]) -> int:
        """Insert a new message and return its id. The first of the batch (or after an erasure) is
        given its id by `next_message_id` in SQL; each later one the next, which is what that SQL
        would give it: no one else adds messages inside the batch's transaction."""
        if self.next_id is None:
            stmt = insert(Message).values(id=next_message_id(), **values).returning(Message.id)
            message_id = int((await (await self.immediate()).execute(stmt)).scalar_one())
        else:
            message_id = self.next_id
            self.held.messages.append({"id": message_id, **values})
        self.next_id = message_id + 1
        return message_id

    async def _observe(self, recorded: Recorded) -> None:
        for observer, wants in self.checks:
            if wants is not None and not await wants(self.session, recorded):
                continue  # it would do nothing with this message
            await observer(await self.immediate(index=False), recorded)


def _check_of(observer: RecordObserver) -> Callable[[AsyncSession, Recorded], Awaitable[bool]] | None:
    """The observer's `SelectiveObserver.wants`, if it has one."""
    return observer.wants if isinstance(observer, SelectiveObserver) else None


class Ingestor:
    """Writes messages, chats, persons and the full-text index in one transaction per call.

    Idempotent on (chat, platform message id): a redelivered message returns the stored row and
    changes nothing; an edited one (`ChatMessage.edited`) with another text replaces it, and one its
    platform said was deleted is not recorded (`erased`). Observers run inside the same transaction
    for each newly created message, in order.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self.observers: list[RecordObserver] = []

    async def record_many(self, messages: Iterable[ChatMessage], searchable: bool = True) -> BatchReport:
        """Record a batch in one transaction. `searchable=False` keeps messages out of the full-text
        index (the bot's answers to memory commands, which would otherwise echo back in recall)."""
        report = BatchReport()
        batch = list(messages)
        async with self.db.write() as session:
            writer = _BatchWriter(session, self.observers, searchable)
            chats: dict[tuple[str, str], tuple[ChatTarget, set[str]]] = {}
            for message in batch:
                key = (message.platform, message.chat_id)
                if key not in chats:
                    chats[key] = await writer.open_chat(message, batch)
                target, deleted = chats[key]
                recorded = await writer.record(target.chat_id, target.stored(message), deleted)
                report.recorded.append(recorded)
                if recorded.created:
                    report.created += 1
                elif recorded.erased:
                    report.erased += 1
                elif recorded.clash:
                    report.clashes.append(message)
                else:
                    report.duplicates += 1
            await writer.finish([r.message_id for r in report.recorded if r.created])
        return report
