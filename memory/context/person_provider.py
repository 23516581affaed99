"""Person cards in the reply context: who is speaking, @-mentioned, named, referred to by a pronoun,
or replied to.

Cards go in by id lookup (Mio v2's "contact card" bypassing semantic search), under their own token
budget and ahead of recall. Only what the current chat knows is shown (its own rows plus global ones).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memory.context.builder import ContextRequest, ContextSection
from memory.persons import store
from memory.persons.card import render_card
from memory.persons.config import PersonsConfig
from memory.persons.pronouns import RecentPerson, resolve_pronoun
from memory.persons.resolver import PersonResolver
from memory.recall.pipeline import MAX_QUESTION_CHARS
from memory.storage import Database
from memory.text import truncate
from memory.text.language import language_of

PRIORITY = 30


def _head(text: str) -> str:
    """The start of a message that is searched for names and pronouns, as long as recall reads: the
    search costs event-loop time in proportion to the text, and a flood message in the recent window
    would otherwise hold the bot for a minute on every reply."""
    return truncate(text, MAX_QUESTION_CHARS, ellipsis="")


class PersonCardProvider:
    """The "people" section of the reply context."""

    name = "persons"

    def __init__(
        self, db: Database, resolver: PersonResolver, config: Callable[[], PersonsConfig] | None = None
    ) -> None:
        self.db = db
        self.resolver = resolver
        self.config = config or PersonsConfig

    async def people(self, request: ContextRequest) -> list[int]:
        """The people the message is about, most relevant first: @-mentioned, named, referred to by a
        pronoun ("她最近怎么样" → the person most recently discussed; in a reply, "他为什么不去" → the
        author of the message replied to), the author replied to, then the speaker."""
        message = request.message
        if message is None:
            return []
        config = self.config()
        async with self.db.read() as session:
            platform = await store.platform_of(session, request.chat_id)
            earlier = [m for m in request.recent if m.id < message.id]
            by_user = await store.person_ids_for(
                session, platform, [u for m in (*earlier, message) for u in m.mentions]
            )
        named, *named_earlier = await self.resolver.mentions_in(
            request.chat_id, [_head(request.query or message.text), *(_head(m.text) for m in earlier)]
        )
        found: list[int] = [by_user[u] for u in message.mentions if u in by_user] + named
        recent: list[RecentPerson] = []
        for m, names in zip(earlier, named_earlier, strict=True):
            discussed = [by_user[u] for u in m.mentions if u in by_user] + names
            recent += [RecentPerson(str(p), m.time.timestamp()) for p in discussed]
        replied = request.replied
        author = replied.person_id if replied is not None and not replied.is_bot else None
        if author is not None:  # a reply is about its target: the latest one discussed
            recent.append(RecentPerson(str(author), message.time.timestamp()))
        speaker = message.person_id
        referred = resolve_pronoun(
            _head(message.text),
            recent,
            exclude=[str(speaker)] if speaker is not None else [],
            now=message.time.timestamp(),
            max_age=config.pronoun_max_age_seconds,
        )
        if referred is not None:
            found.append(int(referred))
        if author is not None:
            found.append(author)
        if speaker is not None:
            found.append(speaker)
        return list(dict.fromkeys(found))

    async def section(self, request: ContextRequest) -> ContextSection | None:
        config = self.config()
        cards: list[str] = []
        if config.max_cards <= 0:
            return None
        wanted = await self.people(request)
        said = [m.text for m in request.recent if not m.is_bot]
        language = language_of([*said, request.message.text] if request.message else said)
        async with self.db.read() as session:
            for person_id in wanted:
                record = await store.person_record(session, request.chat_id, person_id)
                if record is None or record.is_bot:
                    continue
                cards.append(
                    render_card(
                        record.view, config.card_max_chars, max_tokens=config.card_tokens, language=language
                    )
                )
                if len(cards) >= config.max_cards:
                    break
        if not cards:
            return None
        return ContextSection("persons", "People in this conversation", cards, config.card_tokens, PRIORITY)


class SpeakerNames:
    """person_id → the person_name used in a chat, for rendering transcripts with aliases."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def __call__(self, chat_id: int, person_ids: Sequence[int]) -> dict[int, str]:
        async with self.db.read() as session:
            names = await store.chat_names(session, chat_id)
        return {pid: names[pid] for pid in person_ids if pid in names}
