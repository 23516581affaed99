"""The one way in: recording ChatMessages into the raw store, idempotently and race-free."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace

from sqlalchemy import insert, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.commands import is_memory_command
from memory.embeddings.store import drop_vectors
from memory.message_ids import NEXT_CHAT_ID_SQL, next_message_id
from memory.message_removal import deleted_among, erase_messages
from memory.models import ChatRedirect, Message
from memory.storage import Database
from memory.storage.fts import index_rows
from memory.turn_windows import refresh_windows
from memory.types import ChatMessage


@dataclass(frozen=True, slots=True)
class Recorded:
    """A message as stored: database ids and whether this call created it. `clash`: not created because
    its id was already taken in the chat by a message with another text (the first is kept). `erased`:
    not created (ids 0) because its sender asked for their messages up to then to be deleted.
    `message` is as stored: its ids prefixed when its chat was merged into another (`ChatTarget`)."""

    message_id: int
    chat_id: int
    person_id: int
    created: bool
    message: ChatMessage
    clash: bool = False
    erased: bool = False  # not recorded: its sender had their messages up to its time deleted on request


@dataclass(slots=True)
class BatchReport:
    created: int = 0
    duplicates: int = 0
    erased: int = 0  # not recorded: sent before their sender's messages were deleted on request
    clashes: list[ChatMessage] = field(default_factory=list)  # not recorded: their ids held other text
    recorded: list[Recorded] = field(default_factory=list)


RecordObserver = Callable[[AsyncSession, Recorded], Awaitable[None]]


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
_UPSERT_PERSON = text(
    "INSERT INTO persons "
    "(platform, platform_user_id, nickname, is_bot, first_seen, last_seen, message_count) "
    "VALUES (:platform, :user, :nickname, :is_bot, :ts, :ts, 1) "
    "ON CONFLICT (platform, platform_user_id) DO UPDATE SET "
    "nickname = CASE WHEN excluded.nickname != '' AND (persons.nickname = '' "
    "OR excluded.last_seen >= persons.last_seen) AND NOT EXISTS (SELECT 1 FROM person_forgotten f "
    "WHERE f.person_id = persons.id AND f.time >= excluded.last_seen) "
    "THEN excluded.nickname ELSE persons.nickname END, "
    "first_seen = min(persons.first_seen, excluded.first_seen), "
    "last_seen = max(persons.last_seen, excluded.last_seen), "
    "message_count = persons.message_count + 1 "
    "RETURNING id"
)
_MERGED_ACCOUNT = text(
    "UPDATE persons SET first_seen = min(first_seen, :ts), last_seen = max(last_seen, :ts), "
    "message_count = message_count + 1 WHERE id = (SELECT person_id FROM person_accounts "
    "WHERE platform = :platform AND platform_user_id = :user) RETURNING id"
)
# Up to when the sender's messages were deleted on request (their account's person, or the person it
# was merged into), if ever.
_ERASED_UNTIL = text(
    "SELECT messages_removed_until FROM person_forgotten WHERE person_id = coalesce("
    "(SELECT person_id FROM person_accounts WHERE platform = :platform AND platform_user_id = :user), "
    "(SELECT id FROM persons WHERE platform = :platform AND platform_user_id = :user))"
)
_UPSERT_MEMBER = text(
    "INSERT INTO chat_members (chat_id, person_id, card, first_seen, last_seen, message_count) "
    "VALUES (:chat_id, :person_id, :card, :ts, :ts, 1) "
    "ON CONFLICT (chat_id, person_id) DO UPDATE SET "
    "card = CASE WHEN excluded.card != '' AND (chat_members.card = '' "
    "OR excluded.last_seen >= chat_members.last_seen) AND NOT EXISTS (SELECT 1 FROM person_forgotten f "
    "WHERE f.person_id = chat_members.person_id AND f.time >= excluded.last_seen) "
    "THEN excluded.card ELSE chat_members.card END, "
    "first_seen = min(chat_members.first_seen, excluded.first_seen), "
    "last_seen = max(chat_members.last_seen, excluded.last_seen), "
    "message_count = chat_members.message_count + 1"
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


async def upsert_person(session: AsyncSession, message: ChatMessage) -> int:
    """The sender's person id: the person an account was merged into, else the account's own person
    (created on its first message)."""
    params = {
        "platform": message.platform,
        "user": message.sender_id,
        "nickname": message.sender_name,
        "is_bot": message.is_bot,
        "ts": _ts(message),
    }
    merged_into = (await session.execute(_MERGED_ACCOUNT, params)).scalar_one_or_none()
    if merged_into is not None:
        return int(merged_into)
    return int((await session.execute(_UPSERT_PERSON, params)).scalar_one())


async def upsert_member(session: AsyncSession, chat_id: int, person_id: int, message: ChatMessage) -> None:
    params = {"chat_id": chat_id, "person_id": person_id, "card": message.sender_card, "ts": _ts(message)}
    await session.execute(_UPSERT_MEMBER, params)


class Ingestor:
    """Writes messages, chats, persons and the full-text index in one transaction per call.

    Idempotent on (chat, platform message id): a redelivered message returns the stored row and
    changes nothing; an edited one (`ChatMessage.edited`) with another text replaces it, and one its
    platform said was deleted is not recorded (`erased`). Observers run inside the same transaction
    for each newly created message.
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
            chats: dict[tuple[str, str], tuple[ChatTarget, set[str]]] = {}
            for message in batch:
                key = (message.platform, message.chat_id)
                if key not in chats:
                    target = await chat_target(
                        session, *key, message.chat_kind.value, message.chat_name, _ts(message)
                    )
                    ids = [target.prefix + m.message_id for m in batch if (m.platform, m.chat_id) == key]
                    chats[key] = target, await deleted_among(session, target.chat_id, ids)
                target, deleted = chats[key]
                stored = target.stored(message)
                recorded = await self._record_one(session, target.chat_id, stored, searchable, deleted)
                report.recorded.append(recorded)
                if recorded.created:
                    report.created += 1
                elif recorded.erased:
                    report.erased += 1
                elif recorded.clash:
                    report.clashes.append(message)
                else:
                    report.duplicates += 1
            changed = await refresh_windows(session, [r.message_id for r in report.recorded if r.created])
            # A message is embedded with its turn window: a neighbour's new window needs a new vector.
            await drop_vectors(session, "message", changed)
        return report

    async def _record_one(
        self,
        session: AsyncSession,
        chat_id: int,
        message: ChatMessage,
        searchable: bool,
        deleted: set[str],
    ) -> Recorded:
        """Record one message of a batch; `deleted`: the batch's ids in the chat said deleted."""
        existing = await session.execute(
            select(Message.id, Message.person_id, Message.text).where(
                Message.chat_id == chat_id, Message.platform_message_id == message.message_id
            )
        )
        row = existing.first()
        if row is not None:
            if not (message.edited and row.text != message.text):
                return Recorded(row.id, chat_id, row.person_id or 0, False, message, row.text != message.text)
            # The stored version goes with what was learnt from it (its sender's count too); the new
            # one is recorded as a message of its own, which every job reads afresh and counts again.
            await erase_messages(session, [row.id], time.time())
        elif message.message_id in deleted:
            return Recorded(0, chat_id, 0, False, message, erased=True)
        until = await session.scalar(_ERASED_UNTIL, {"platform": message.platform, "user": message.sender_id})
        if until is not None and _ts(message) <= until:
            return Recorded(0, chat_id, 0, False, message, erased=True)
        person_id = await upsert_person(session, message)
        await upsert_member(session, chat_id, person_id, message)
        values = {
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
        }
        stmt = insert(Message).values(id=next_message_id(), **values).returning(Message.id)
        message_id = int((await session.execute(stmt)).scalar_one())
        if searchable and not is_memory_command(message.text):
            await index_rows(session, "messages_fts", [(message_id, message.text)])
        recorded = Recorded(message_id, chat_id, person_id, True, message)
        for observer in self.observers:
            await observer(session, recorded)
        return recorded
