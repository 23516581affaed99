"""The per-message observer: names seen on every message, inside the record transaction, no LLM.

For each newly recorded message it records the sender's nickname (global) and group card (this
chat, with the names inside the card), gives the sender a `person_name` in the chat on first sight
(unique there: all writes share one writer transaction, and the table has a unique key as a safety
net), notes a card change on the timeline, and records names declared in the message ("叫我老赵",
"call me Bob", "以后就叫你小A吧"). A confident self-declared name becomes the person_name when free.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Callable

from sqlalchemy import Select, event, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from memory.ingest import Recorded
from memory.models import Message, PersonChatName
from memory.offload import text_work
from memory.persons import store, timeline_text
from memory.persons.addressed import could_address, note_addressed_names
from memory.persons.config import PersonsConfig
from memory.persons.declarations import Target, could_declare, extract_declarations
from memory.persons.forgotten import Forgotten, forgotten_at
from memory.persons.names import clean_name, name_key
from memory.persons.naming import vet_suggested_name
from memory.persons.speech import Utterance
from memory.text import analysed
from memory.types import ChatMessage

log = logging.getLogger(__name__)

# Cheap pre-filter: only messages that can declare a name go through jieba-based extraction.
_MAY_DECLARE = re.compile(
    r"叫|喊|称呼|名字|昵称|网名|外号|小名|我是|本人是|(?i:call|name|go\s+by|i'?m|i\s+am)"
)
RENAME_MIN_CONFIDENCE = 0.9
SEEN_CACHE_SIZE = 50_000


class PersonObserver:
    """An `Ingestor` observer; `config` is read on every message so a reload applies at once."""

    def __init__(self, config: Callable[[], PersonsConfig]) -> None:
        self.config = config
        # (chat, person) → (nickname, card) last handled by this process: most messages come from
        # someone whose names did not change, and they then cost no query at all. The alias rows'
        # last_seen/count therefore advance when a name is (re)observed, not on every message.
        self._seen: OrderedDict[tuple[int, int], tuple[str, str]] = OrderedDict()

    def forget_cache(self) -> None:
        """Drop the cache (after admin edits, so the next message re-records current names)."""
        self._seen.clear()

    async def wants(self, session: AsyncSession, recorded: Recorded) -> bool:
        """Whether the message may teach anything (`memory.ingest.SelectiveObserver`): names not yet
        handled, or words that may declare one. No query."""
        return any(self._news(session, recorded))

    async def __call__(self, session: AsyncSession, recorded: Recorded) -> None:
        config = self.config()
        message = recorded.message
        person_id, chat_id = recorded.person_id, recorded.chat_id
        names_changed, may_declare, may_address = self._news(session, recorded)
        if not (names_changed or may_declare or may_address):
            return
        forgotten = await forgotten_at(session, person_id)
        if forgotten is not None and forgotten.covers_recorded(recorded):
            return  # said before they asked to be forgotten (an imported history): nothing is learnt
        if names_changed:
            await self._observe_names(session, recorded, config)
            self._pending(session)[(chat_id, person_id)] = (message.sender_name, message.sender_card)
        may_address = may_address and config.records("others")
        if not (may_declare or may_address):
            return
        utterance = await _utterance(session, recorded)
        if may_declare:
            names = await store.chat_names(session, chat_id)
            await self._declarations(session, recorded, utterance, config, names, store.ts(message.time))
        if may_address:
            said_in = recorded.first_id or recorded.message_id  # an edit is one message with its first
            if await note_addressed_names(session, chat_id, utterance, said_in, config.alias_sources):
                await store.bump_version(session, chat_id)

    def _news(self, session: AsyncSession, recorded: Recorded) -> tuple[bool, bool, bool]:
        """(names changed, may declare a name, may call someone by a name): whether the sender's names
        differ from those last handled in the chat, whether the text has words that may declare a
        name, and whether a message addressed to someone may start by calling them by one."""
        message = recorded.message
        key = (recorded.chat_id, recorded.person_id)
        pending = self._pending(session)
        names_changed = pending.get(key, self._seen.get(key)) != (message.sender_name, message.sender_card)
        # The pre-filter also passes "[image]" or "time"; the check of the words extraction reads keeps
        # such messages from the queries and the send of the batch's held writes a declaration needs.
        own = not message.is_bot and not message.forwarded  # forwarded: someone else's words
        may_declare = own and bool(_MAY_DECLARE.search(message.text)) and could_declare(_own_words(message))
        may_address = (
            own and bool(message.mentions or message.reply_to) and could_address(_own_words(message))
        )
        return names_changed, may_declare, may_address

    def _pending(self, session: AsyncSession) -> dict[tuple[int, int], tuple[str, str]]:
        """Names handled in this transaction; they enter the cache only if it commits."""
        info = session.info
        if "persons_seen" not in info:
            info["persons_seen"] = {}

            def committed(_session: Session) -> None:
                self._seen.update(info.pop("persons_seen", {}))
                while len(self._seen) > SEEN_CACHE_SIZE:
                    self._seen.popitem(last=False)

            event.listen(session.sync_session, "after_commit", committed, once=True)
        pending: dict[tuple[int, int], tuple[str, str]] = info["persons_seen"]
        return pending

    async def _observe_names(self, session: AsyncSession, recorded: Recorded, config: PersonsConfig) -> None:
        message = recorded.message
        when = store.ts(message.time)
        person_id, chat_id, message_id = recorded.person_id, recorded.chat_id, recorded.message_id
        if config.records("nickname") and clean_name(message.sender_name):
            if await store.add_alias(
                session, person_id, None, message.sender_name, "nickname", time=when, message_id=message_id
            ):
                await store.bump_version(session, None)
        card_names: list[str] = []
        if config.records("card") and clean_name(message.sender_card):
            card_names = store.card_names(message.sender_card)
            new_card = False
            for alias in (message.sender_card, *card_names):
                if await store.add_alias(
                    session, person_id, chat_id, alias, "card", time=when, message_id=message_id
                ):
                    new_card = True
            if new_card:
                await store.bump_version(session, chat_id)
                await self._note_card_change(session, recorded, when)
        if await session.get(PersonChatName, (chat_id, person_id)) is None:
            await store.name_at_first_sight(
                session,
                chat_id,
                person_id,
                card_names[0] if card_names else message.sender_card,
                message.sender_name,
                message.sender_id,
                time=when,
                max_chars=config.person_name_max_chars,
            )

    async def _note_card_change(self, session: AsyncSession, recorded: Recorded, when: float) -> None:
        forgotten = await forgotten_at(session, recorded.person_id)
        query = previous_card(recorded.chat_id, recorded.person_id, when, recorded.message_id, forgotten)
        previous = (await session.execute(query)).scalar_one_or_none()
        card = clean_name(recorded.message.sender_card)
        if previous and name_key(previous) != name_key(card):
            await store.add_timeline(
                session,
                recorded.person_id,
                recorded.chat_id,
                when,
                timeline_text.card_change(card, clean_name(previous)),
                [recorded.message_id],
                kind="card",
            )

    async def _declarations(
        self,
        session: AsyncSession,
        recorded: Recorded,
        utterance: Utterance,
        config: PersonsConfig,
        names: dict[int, str],
        when: float,
    ) -> None:
        changed = False
        for declared in await text_work(len(utterance.text), extract_declarations, utterance):
            source = "self" if declared.target is Target.SELF else "others"
            if not config.records(source):
                continue
            person_id = int(declared.person_id)
            if await store.add_alias(
                session,
                person_id,
                recorded.chat_id,
                declared.alias,
                source,
                time=when,
                weight=declared.confidence,
                message_id=recorded.message_id,
            ):
                changed = True
                await store.add_timeline(
                    session,
                    person_id,
                    recorded.chat_id,
                    when,
                    timeline_text.declared(source, declared.alias),
                    [recorded.message_id],
                    kind="alias",
                )
            if (
                source == "self"
                and config.self_declared_rename
                and declared.confidence >= RENAME_MIN_CONFIDENCE
                and name_key(names.get(person_id, "")) != name_key(declared.alias)
                and not await _named_by_admin_after(session, recorded.chat_id, person_id, when)
            ):
                taken = [n for pid, n in names.items() if pid != person_id]
                vetted = vet_suggested_name(declared.alias, taken, max_chars=config.person_name_max_chars)
                if vetted:
                    await store.set_person_name(
                        session,
                        recorded.chat_id,
                        person_id,
                        vetted,
                        source="self",
                        time=when,
                        reason=f"self-declared in message {recorded.message_id}",
                    )
                    names[person_id] = vetted
        if changed:
            await store.bump_version(session, recorded.chat_id)


async def _named_by_admin_after(session: AsyncSession, chat_id: int, person_id: int, when: float) -> bool:
    """True when an admin chose the person's name in the chat after `when`: a name they declared in an
    older message (an imported history) does not undo that choice; one declared since does."""
    named = await session.get(PersonChatName, (chat_id, person_id))
    return named is not None and named.source == "admin" and named.updated_at > when


async def _utterance(session: AsyncSession, recorded: Recorded) -> Utterance:
    """The message as the name readers take it: its own words, whom it @-mentions and whose message it
    replies to (person ids)."""
    message = recorded.message
    platform_ids = await store.person_ids_for(session, message.platform, message.mentions)
    reply_to: int | None = None
    if message.reply_to:
        reply_to = (await store.senders_of(session, recorded.chat_id, [message.reply_to])).get(
            message.reply_to
        )
    return Utterance(
        key=str(recorded.message_id),
        speaker_id=str(recorded.person_id),
        text=_own_words(message),
        time=message.time,
        mentioned_ids=tuple(str(platform_ids[m]) for m in message.mentions if m in platform_ids),
        reply_to_id=str(reply_to) if reply_to is not None else None,
    )


def _own_words(message: ChatMessage) -> str:
    """The part of a message name declarations are read from (`store.own_words`, as analysed)."""
    return analysed(store.own_words(message.text, [s.to_json() for s in message.segments]))


def previous_card(
    chat_id: int, person_id: int, when: float, message_id: int, forgotten: Forgotten | None
) -> Select[str]:
    """The group card a person showed in a chat before their message `message_id` sent at `when`: on
    the one before it in time, not in recording order (imported history comes later), leaving out
    messages from before their request to be forgotten, `forgotten` (a card from then went with it)."""
    query = (
        select(Message.sender_card)
        .where(
            Message.chat_id == chat_id,
            Message.person_id == person_id,
            Message.time <= when,  # on its own: a range on the (chat, time) index
            or_(Message.time < when, Message.id < message_id),
            Message.sender_card != "",
        )
        .order_by(Message.time.desc(), Message.id.desc())
        .limit(1)
    )
    return query if forgotten is None else query.where(forgotten.after())


async def taken_names(session: AsyncSession, chat_id: int, except_person: int | None = None) -> list[str]:
    """The person_names in use in a chat (for collision checks by admins and LLM suggestions)."""
    rows = await session.execute(
        select(PersonChatName.person_id, PersonChatName.person_name).where(PersonChatName.chat_id == chat_id)
    )
    return [name for pid, name in rows.all() if pid != except_person]
