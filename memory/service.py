"""MemoryService: the facade the bot and the CLI use — record, context, search, admin reads."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from itertools import islice

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory import messages
from memory.chat_marks import ChatCache
from memory.clock import Clock, SystemClock
from memory.context import ContextBuilder, ContextProvider, ContextRequest, ReplyContext
from memory.context.recent import RecentWindowProvider
from memory.context.replied import RepliedProvider
from memory.history.reinforce import reinforce
from memory.ingest import BatchReport, Ingestor, Recorded, chat_target, redirected_chat
from memory.membership import apply_change
from memory.message_removal import erase_messages, remember_deleted
from memory.models import Chat, ChatMember, ChatRedirect, Message, Person
from memory.nicknames import ChatNicknames
from memory.notes import NoteScopes
from memory.recall import Recaller, RecallHit, RecallQuery
from memory.recall.timeexpr import in_zone
from memory.storage import Database
from memory.storage.sql import json_values, stored_int
from memory.text.language import Language
from memory.types import ChatKind, ChatMessage, MembershipChange, MessageDeletion


@dataclass(frozen=True, slots=True)
class ChatRef:
    """A chat as the database knows it."""

    id: int
    platform: str
    platform_chat_id: str
    name: str
    merged_from: str | None = None  # the key asked for, when it led here because of a chat merge

    @property
    def key(self) -> str:
        """The stable `platform:id` key (names the chat's notes folder)."""
        return f"{self.platform}:{self.platform_chat_id}"


@dataclass(frozen=True, slots=True)
class SearchHit:
    kind: str
    id: int
    chat_id: int
    text: str
    speaker: str
    score: float
    message: messages.StoredMessage | None = None


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """Context budgets, and the time zone the context shows times in (`timezone`: None keeps the
    clock's own offset, "local" is the machine's, anything else an IANA name)."""

    total_tokens: int = 2000
    recent_messages: int = 20
    recent_tokens: int = 800
    timezone: str | None = None


class MemoryService:
    """The one object the rest of Qunyi talks to about memory."""

    def __init__(
        self,
        db: Database,
        clock: Clock | None = None,
        context_settings: ContextSettings | None = None,
        notes: NoteScopes | None = None,
    ) -> None:
        self.db = db
        self.clock = clock or SystemClock()
        self.ingestor = Ingestor(db)
        self._recent = RecentWindowProvider(0)
        self.context_providers: list[ContextProvider] = [self._recent, RepliedProvider(self._recent)]
        self.context_settings = context_settings or ContextSettings()
        self.notes = notes
        self.recaller = Recaller(db)
        self.nicknames = ChatNicknames()
        # What else is kept in memory per chat (names, vocabularies): see `forget_chats`.
        self.chat_caches: list[ChatCache] = [self.nicknames]

    @property
    def context_settings(self) -> ContextSettings:
        """The context budgets; setting them (on a config reload) also resizes the recent window."""
        return self._context_settings

    @context_settings.setter
    def context_settings(self, settings: ContextSettings) -> None:
        self._context_settings = settings
        self._recent.budget_tokens = settings.recent_tokens

    def forget_chats(self, chat_ids: Iterable[int]) -> None:
        """Drop what this process keeps in memory of these chats, recall's vectors and glossary and
        every `chat_caches` entry, so their next use reads them again: after a chat merge this process
        made (the chat merged away and the one it went into). Each cache notices a merge made by
        another process at its next use (memory.chat_marks)."""
        ids = set(chat_ids)
        caches: list[ChatCache] = [self.recaller.vectors, *self.chat_caches]
        if self.recaller.glossary is not None:
            caches.append(self.recaller.glossary)
        for cache in caches:
            cache.forget_chats(ids)

    async def record(self, message: ChatMessage, searchable: bool = True) -> Recorded:
        """Store one message (idempotent on chat + platform message id)."""
        report = await self.ingestor.record_many([message], searchable)
        self.nicknames.recorded(report.recorded)
        return report.recorded[0]

    async def record_many(self, batch: Iterable[ChatMessage], batch_size: int = 2000) -> BatchReport:
        """The import path: thousands of messages per transaction."""
        total = BatchReport()
        iterator = iter(batch)
        while chunk := list(islice(iterator, batch_size)):
            report = await self.ingestor.record_many(chunk)
            self.nicknames.recorded(report.recorded)
            total.created += report.created
            total.duplicates += report.duplicates
            total.erased += report.erased
            total.clashes.extend(report.clashes)
        return total

    async def delete(self, deletion: MessageDeletion) -> bool:
        """Forget a message its platform says was deleted, with what was learnt from it
        (`memory.message_removal`), and keep it from being recorded again. True when a stored message
        was removed. A deletion in a chat never recorded makes the chat, as its first message would,
        so that an import of its history later leaves the message out; one in a chat merged into
        another applies there (`memory.ingest.chat_target`)."""
        now = self.clock.now().timestamp()
        async with self.db.write() as session:
            target = await chat_target(
                session, deletion.platform, deletion.chat_id, deletion.chat_kind.value, "", now
            )
            platform_id = target.prefix + deletion.message_id
            await remember_deleted(session, target.chat_id, platform_id, now)
            stored = await session.scalar(
                select(Message.id).where(
                    Message.chat_id == target.chat_id, Message.platform_message_id == platform_id
                )
            )
            if stored is None:
                return False
            await erase_messages(session, [stored], now)
        self.nicknames.forget_chats([target.chat_id])  # its sender counts one message less there
        return True

    async def change_membership(self, change: MembershipChange) -> int:
        """Mark a member who left the chats of `change` as gone from them, or end the mark when they
        joined again (`memory.membership`); how many memberships changed. Chats and people memory has
        never seen are left alone."""
        async with self.db.write() as session:
            return await apply_change(session, change)

    async def chat(self, platform: str, platform_chat_id: str) -> ChatRef | None:
        async with self.db.read() as session:
            row = (
                await session.execute(
                    select(Chat).where(Chat.platform == platform, Chat.platform_chat_id == platform_chat_id)
                )
            ).scalar_one_or_none()
        return None if row is None else ChatRef(row.id, row.platform, row.platform_chat_id, row.name)

    async def chat_kind(self, platform: str, platform_chat_id: str) -> ChatKind | None:
        """The kind (group, private) memory holds for chat `platform:platform_chat_id`, that of the chat
        it was merged into when merged; None for a chat it has never seen."""
        async with self.db.read() as session:
            kind = await session.scalar(
                select(Chat.kind).where(await _held_chat(session, platform, platform_chat_id))
            )
        return None if kind is None else ChatKind(kind)

    async def chat_nicknames(self, platform: str, platform_chat_id: str) -> dict[str, str]:
        """The members memory has seen in chat `platform:platform_chat_id` (that of the chat it was
        merged into when merged) by nickname: nickname -> platform user id. The bot is left out; of
        members sharing a nickname, the most active has it. Kept per chat until they may have changed
        (memory.nicknames): a call costs two small queries then."""
        mark = self.nicknames.mark()
        async with self.db.read() as session:
            chat_id = await session.scalar(
                select(Chat.id).where(await _held_chat(session, platform, platform_chat_id))
            )
            if chat_id is None:
                return {}
            return await self.nicknames.names(session, (platform, platform_chat_id), chat_id, mark)

    async def find_chat(self, key: str) -> ChatRef | None:
        """A chat by `platform:id`, by platform id alone when unambiguous, or by its database id."""
        found = await self.chats_matching(key, limit=2)
        return found[0] if len(found) == 1 else None

    async def chats_matching(self, key: str, limit: int = 5) -> list[ChatRef]:
        """The chats (at most `limit`, by id) that `key` may name as `find_chat` reads it: several when
        the platform id alone is used on more than one platform. Platform names hold no colon, so a
        key splits at its first one (`replay:team:dev` is chat `team:dev` of `replay`); the whole key
        may also be a platform id."""
        platform, colon, ident = key.partition(":")
        wanted = Chat.platform_chat_id == key
        merged = ChatRedirect.platform_chat_id == key
        if colon:
            wanted |= (Chat.platform == platform) & (Chat.platform_chat_id == ident)
            merged |= (ChatRedirect.platform == platform) & (ChatRedirect.platform_chat_id == ident)
        if (number := stored_int(key)) is not None:
            wanted |= Chat.id == number
        async with self.db.read() as session:
            rows = (await session.scalars(select(Chat).where(wanted).order_by(Chat.id).limit(limit))).all()
            if rows:
                return [ChatRef(row.id, row.platform, row.platform_chat_id, row.name) for row in rows]
            # A key merged away leads to the chat its memory went into, as its messages do.
            led = await session.execute(
                select(Chat, ChatRedirect.platform, ChatRedirect.platform_chat_id)
                .join(ChatRedirect, ChatRedirect.chat_id == Chat.id)
                .where(merged)
                .order_by(Chat.id)
                .limit(limit)
            )
            return [
                ChatRef(row.id, row.platform, row.platform_chat_id, row.name, f"{old_platform}:{old_id}")
                for row, old_platform, old_id in led.all()
            ]

    async def merged_into(self, chat_id: int) -> ChatRef | None:
        """The chat that the chat with this database id was merged into (its `merged_from` the merged
        chat's key), following later merges; None for an id that is no merged chat (or was merged
        before its id was kept, by a Qunyi older than 0013_redirect_chat_ids)."""
        async with self.db.read() as session:
            found = (
                await session.execute(
                    select(Chat, ChatRedirect.platform, ChatRedirect.platform_chat_id)
                    .join(ChatRedirect, ChatRedirect.chat_id == Chat.id)
                    .where(ChatRedirect.from_chat_id == chat_id)
                    .limit(1)
                )
            ).first()
        if found is None:
            return None
        row, platform, platform_chat_id = found
        return ChatRef(row.id, row.platform, row.platform_chat_id, row.name, f"{platform}:{platform_chat_id}")

    async def has_unplaced_merges(self) -> bool:
        """Whether a chat was merged without its database id being kept (by a Qunyi older than
        0013_redirect_chat_ids; also a key moved before it was ever recorded): `merged_into` cannot
        tell where such a chat went by its old id, only `chat_overviews`' `merged_from` by its key."""
        async with self.db.read() as session:
            found = await session.scalar(
                select(ChatRedirect.chat_id).where(ChatRedirect.from_chat_id.is_(None)).limit(1)
            )
        return found is not None

    async def chat_key(self, chat_id: int) -> str | None:
        """The stable `platform:id` key of a chat (names its notes folder)."""
        return (await self.chat_keys([chat_id])).get(chat_id)

    async def chat_keys(self, chat_ids: Iterable[int]) -> dict[int, str]:
        """The `platform:id` key of each chat of `chat_ids` that exists, by database id."""
        wanted = set(chat_ids)
        if not wanted:
            return {}
        async with self.db.read() as session:
            rows = await session.execute(
                select(Chat.id, Chat.platform, Chat.platform_chat_id).where(
                    Chat.id.in_(json_values(sorted(wanted)))
                )
            )
        return {chat_id: f"{platform}:{platform_chat_id}" for chat_id, platform, platform_chat_id in rows}

    async def recent(
        self, chat_id: int, limit: int, before_id: int | None = None
    ) -> list[messages.StoredMessage]:
        async with self.db.read() as session:
            return await messages.recent(session, chat_id, limit, before_id)

    async def language(self, chat_id: int, also: Iterable[str] = ()) -> Language:
        """The language the chat writes in, `also` counted (`messages.chat_language`)."""
        async with self.db.read() as session:
            return await messages.chat_language(session, chat_id, also)

    async def search(self, chat_ids: Sequence[int], query: str, limit: int = 10) -> list[SearchHit]:
        """Recall scoped to the given chats; callers decide the scope (one chat unless config allows)."""
        hits = await self.recall(RecallQuery(query, tuple(chat_ids), self.clock.now(), limit=limit))
        message_ids = [h.id for h in hits if h.kind == "message"]
        async with self.db.read() as session:
            stored = {m.id: m for m in await messages.by_ids(session, message_ids)}

        def source(hit: RecallHit) -> messages.StoredMessage | None:
            return stored.get(hit.id) if hit.kind == "message" else None

        return [SearchHit(h.kind, h.id, h.chat_id, h.text, h.speaker, h.score, source(h)) for h in hits]

    async def recall(self, query: RecallQuery) -> list[RecallHit]:
        """The hybrid recall (messages and ChatHistory) with the query's full `where`."""
        return await self.recaller.recall(query)

    async def speaker_name(self, chat_id: int, message: messages.StoredMessage) -> str:
        """The name the reply context shows `message`'s speaker under (the person_name the bot uses
        for them in the chat: cleaned and bounded, unlike a raw group card)."""
        return (await self.speaker_names(chat_id, [message]))[0]

    async def speaker_names(self, chat_id: int, shown: Sequence[messages.StoredMessage]) -> list[str]:
        """`speaker_name` of each message of `shown`, in one look-up."""
        return await self._recent.speakers(chat_id, shown)

    def context_zone(self) -> tzinfo | None:
        """The time zone the memory shown to the reply model (its context, its tools' results) gives
        times in: the context's `timezone` at its offset now; None keeps each memory's own offset."""
        zone = self.context_settings.timezone
        return in_zone(self.clock.now(), zone).tzinfo if zone else None

    async def context_for_reply(
        self, chat_id: int, message: messages.StoredMessage | None, query: str | None = None
    ) -> ReplyContext:
        """The pre-reply context, with no LLM call. Recall searches for `query`, by default the
        message's text (the reply path passes it without the bot's own name), followed by the text of
        the message it replies to. The recent window is the newest messages that fit its budget;
        recall leaves out only those and the message replied to, which has a section of its own. The
        ChatHistory rows it shows, after every budget, are reinforced once (`count` + 1); rows cut for
        room are not."""
        before = message.id + 1 if message is not None else None
        settings = self.context_settings
        window = await self.recent(chat_id, settings.recent_messages, before)
        if query is None:
            query = message.text if message is not None else ""
        now = self.clock.now()
        zone = self.context_zone()
        recent = await self._recent.fitting(chat_id, window, zone)
        replied = None
        if message is not None and message.reply_to is not None:
            async with self.db.read() as session:
                replied = await messages.by_platform_id(session, chat_id, message.reply_to)
        if replied is not None:  # "这个是什么意思" asks about what it replies to
            query = f"{query} {replied.text}"
        request = ContextRequest(chat_id, message, recent, now, query, zone, replied)
        builder = ContextBuilder(self.context_providers, settings.total_tokens)
        context = await builder.build(request)
        topics = context.shown("history")
        if topics:
            async with self.db.write() as session:
                await reinforce(session, topics)
        return context

    async def stats(self) -> dict[str, int]:
        """Row counts for summaries and `qunyi doctor`."""
        async with self.db.read() as session:
            counts = {}
            for name, model in (
                ("chats", Chat),
                ("persons", Person),
                ("messages", Message),
                ("chat_members", ChatMember),
            ):
                counts[name] = int(
                    (await session.execute(select(func.count()).select_from(model))).scalar_one()
                )
        return counts


async def _held_chat(session: AsyncSession, platform: str, platform_chat_id: str) -> ColumnElement[bool]:
    """The condition on `Chat` picking chat `platform:platform_chat_id`, or the chat it was merged into."""
    redirect = await redirected_chat(session, platform, platform_chat_id)
    if redirect is not None:
        return Chat.id == redirect.chat_id
    return (Chat.platform == platform) & (Chat.platform_chat_id == platform_chat_id)
