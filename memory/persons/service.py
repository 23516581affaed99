"""`PersonMemory`: the people part of memory in one object — observer, resolver, consolidation,
context cards, admin — attached to a `MemoryService` by the composition root."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from memory.context.person_provider import PersonCardProvider, SpeakerNames
from memory.context.recent import RecentWindowProvider
from memory.messages import chat_language
from memory.persons import store
from memory.persons.admin import PersonAdmin
from memory.persons.aliases import Resolution
from memory.persons.card import render_card
from memory.persons.config import PersonsConfig
from memory.persons.consolidate import PersonConsolidator
from memory.persons.member_search import MAX_MATCHES, find_members, member_by_id
from memory.persons.observe import PersonObserver
from memory.persons.resolver import PersonResolver
from memory.persons.store import PersonRecord
from memory.ports import LLMPort
from memory.service import MemoryService
from memory.storage import Database

MAX_CANDIDATES = 5


@dataclass(frozen=True, slots=True)
class WhoAnswer:
    """A name looked up in a chat: the resolution and the records of the people it may be."""

    resolution: Resolution
    records: list[PersonRecord]

    @property
    def ambiguous(self) -> bool:
        return self.resolution.ambiguous


class PersonMemory:
    """Everything about people; `config` is a getter so a config reload applies on the next use."""

    def __init__(
        self,
        db: Database,
        config: Callable[[], PersonsConfig] | None = None,
        llm: LLMPort | None = None,
    ) -> None:
        self.db = db
        self.config = config or PersonsConfig
        self.resolver = PersonResolver(db, self.config)
        self.observer = PersonObserver(self.config)
        self.consolidator = PersonConsolidator(db, self.resolver, self.config, llm)
        self.cards = PersonCardProvider(db, self.resolver, self.config)
        self.admin = PersonAdmin(
            db,
            max_name_chars=lambda: self.config().person_name_max_chars,
            on_change=self.observer.forget_cache,
        )

    def attach(self, memory: MemoryService) -> None:
        """Observe every recorded message, add the card section, label transcripts with aliases."""
        _ATTACHED[memory] = self
        memory.ingestor.observers.append(self.observer)
        memory.chat_caches.append(self.resolver)
        memory.context_providers.append(self.cards)
        for provider in memory.context_providers:
            if isinstance(provider, RecentWindowProvider):
                provider.speaker_names = SpeakerNames(self.db)

    async def record(self, chat_id: int, person_id: int) -> PersonRecord | None:
        """A person as a chat knows them (None when not a member)."""
        async with self.db.read() as session:
            return await store.person_record(session, chat_id, person_id)

    async def records(self, chat_id: int, limit: int | None = None, offset: int = 0) -> list[PersonRecord]:
        """The chat's members, most active first (`limit` of them from `offset`, or all)."""
        async with self.db.read() as session:
            ids = await store.member_ids(session, chat_id, limit=limit or None, offset=offset)
            return await _records_of(session, chat_id, ids)

    async def find(self, chat_id: int, text: str, limit: int = MAX_MATCHES) -> list[PersonRecord]:
        """At most `limit` members of the chat that `text` names: their id (`#12`), their user id, or
        part of a name (`member_search`), most active first."""
        async with self.db.read() as session:
            return await _records_of(session, chat_id, await find_members(session, chat_id, text, limit))

    async def card(self, chat_id: int, person_id: int) -> str | None:
        """The rendered card, within the configured budget, in the language the chat writes in."""
        async with self.db.read() as session:
            record = await store.person_record(session, chat_id, person_id)
            language = await chat_language(session, chat_id)
        if record is None:
            return None
        config = self.config()
        return render_card(
            record.view, config.card_max_chars, max_tokens=config.card_tokens, language=language
        )

    async def who(self, chat_id: int, name: str) -> WhoAnswer:
        """Who `name` is in a chat: a platform user id or a person id ("#12") first, then aliases."""
        resolution = await self.resolver.resolve(chat_id, name)
        records = []
        candidates = resolution.matches if resolution.ambiguous else resolution.matches[:1]
        for match in candidates[:MAX_CANDIDATES]:
            record = await self.record(chat_id, int(match.person_id))
            if record is not None:
                records.append(record)
        if not records:  # by user id or person id, looked up, never by reading every member
            async with self.db.read() as session:
                person_id = await member_by_id(session, chat_id, name)
                records = await _records_of(session, chat_id, [] if person_id is None else [person_id])
        return WhoAnswer(resolution, records)


async def _records_of(session: AsyncSession, chat_id: int, person_ids: list[int]) -> list[PersonRecord]:
    """The records of these members of the chat, in order (one no longer a member is left out)."""
    found = []
    for person_id in person_ids:
        record = await store.person_record(session, chat_id, person_id)
        if record is not None:
            found.append(record)
    return found


_ATTACHED: weakref.WeakKeyDictionary[MemoryService, PersonMemory] = weakref.WeakKeyDictionary()


def persons_of(memory: MemoryService) -> PersonMemory:
    """The PersonMemory attached to `memory`, or a default one over the same database (a CLI or
    test that did not attach one)."""
    found = _ATTACHED.get(memory)
    if found is None:
        found = _ATTACHED[memory] = PersonMemory(memory.db)
    return found
