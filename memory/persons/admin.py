"""Admin operations on people: edit names, aliases and facts; merge two persons; forget a person.

Forgetting (a member's request to be forgotten) deletes everything learnt about the person — facts,
timeline, aliases, per-chat names and cards, their nickname — and records the request so kept
messages are never consolidated into a profile again. Raw messages are deleted too only when
`forget_removes_messages` is true (config `[persons]`), and then the topics packed from them, and
those still collecting in the topic cache, are rebuilt from the messages they keep (their verbatim
text, summary, title and terms would quote the deleted words); otherwise they stay, as the group's
record, without the names they were sent under (nor do the topics packed from them keep those).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import ColumnElement, delete, func, select, text, update
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.ext.asyncio import AsyncSession

from memory.changed import ChangedMeanwhile
from memory.embeddings.store import drop_vectors
from memory.history.pack import rename_sources
from memory.membership import folded_departure
from memory.message_removal import ERASE_BATCH, erase_messages, remember_deleted
from memory.models import (
    ChatHistory,
    ChatMember,
    Message,
    Person,
    PersonAccount,
    PersonAlias,
    PersonChatName,
    PersonFact,
    PersonForgotten,
    PersonTimelineEntry,
)
from memory.models.recall import PreferenceDoc
from memory.persons import store
from memory.persons.addressed import move_sightings
from memory.persons.fact_edits import move_fact_edits, note_fact_edit
from memory.persons.facts import Fact, merge_facts, same_value, single_valued
from memory.persons.forgotten import newest_message_id
from memory.persons.names import clean_name, name_key
from memory.persons.naming import name_refusal, vet_suggested_name
from memory.persons.observe import taken_names
from memory.persons.relearn import leave_unread
from memory.persons.sightings import Sightings
from memory.recall.preferences import PREFERENCE_FTS
from memory.storage import Database
from memory.storage.fts import unindex_rows
from memory.storage.sql import rows_changed
from memory.text import normalize, shown_name
from memory.turn_windows import windows_touching


class PersonAdminError(ValueError):
    """An admin request that cannot be applied; the message says why."""


class PersonChanged(PersonAdminError, ChangedMeanwhile):
    """A rename made from a page that showed another name than the person has now."""


def check_alias(alias: str) -> None:
    """Raise PersonAdminError unless `alias` has something a person could be called by."""
    if not name_key(clean_name(alias)):
        raise PersonAdminError(f"{alias!r} has nothing a person could be called by")


def check_fact(key: str, value: str) -> None:
    """Raise PersonAdminError unless the fact has a key and a value."""
    if not key.strip() or not value.strip():
        raise PersonAdminError("a fact needs a key and a value")


def check_addable(key: str, value: str) -> None:
    """Raise PersonAdminError unless a value can be added to `key` beside the values it holds: the fact
    needs a key and a value, and a key holding one value at a time (location, age, favorite:…) is set,
    which replaces the value it holds, not added to."""
    check_fact(key, value)
    if single_valued(key.strip()):
        raise PersonAdminError(
            f"{key.strip()} holds one value at a time: set it, which replaces the value it holds"
        )


def check_removable(key: str, value: str | None, held: Iterable[str]) -> None:
    """Raise PersonAdminError when a removal of `value` of `key` finds nothing among the values of the
    key the person holds in the chat (`held`, current and superseded). Removing a whole key
    (`value` None) that holds nothing is no error: it removes nothing."""
    values = sorted(set(held))
    if value is None or any(same_value(v, value) for v in values):
        return
    known = f"its values: {', '.join(values)}" if values else "they hold no fact of that key"
    raise PersonAdminError(f"no fact {key} = {value} to remove ({known}); nothing was changed")


def check_forgettable(person_id: int, account: str, is_bot: bool) -> None:
    """Raise PersonAdminError when the person is the bot's own account: forgetting it (a request to be
    forgotten is a member's) would erase the bot's side of every conversation from memory."""
    if is_bot:
        raise PersonAdminError(
            f"#{person_id} (account {account}) is the bot's own account: forgetting it would erase the "
            "bot's side of every conversation from memory; nothing was forgotten"
        )


def check_mergeable(survivor: Person, merged: Person) -> None:
    """Raise PersonAdminError when one of the two is the bot's own account and the other a member's: the
    merge would give the member the bot's side of every conversation (or the bot a member's words). Two
    accounts of the bot itself (one per platform) may be merged."""
    if survivor.is_bot != merged.is_bot:
        bot = survivor if survivor.is_bot else merged
        raise PersonAdminError(
            f"#{bot.id} (account {bot.platform_user_id}) is the bot's own account and the other is a "
            "member's: merging them would mix the bot's words with the member's; nothing was merged"
        )


@dataclass(frozen=True, slots=True)
class ForgetReport:
    person_id: int
    facts: int
    timeline: int
    aliases: int
    names: int
    messages_removed: int


class PersonAdmin:
    """Admin edits; every operation is one write transaction."""

    def __init__(
        self,
        db: Database,
        *,
        max_name_chars: Callable[[], int] = lambda: 16,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.db = db
        self._max_name_chars = max_name_chars
        self.on_change = on_change or (lambda: None)

    @property
    def max_name_chars(self) -> int:
        """The longest name `rename` accepts, read at each use so that a config reload applies."""
        return self._max_name_chars()

    async def rename(
        self,
        chat_id: int,
        person_id: int,
        name: str,
        *,
        now: datetime,
        reason: str = "",
        expected_revision: int | None = None,
    ) -> str:
        """Set the person_name used in a chat; refused when another member already uses it. With
        `expected_revision` (`PersonRecord.name_revision` as a page showed it) a name changed since is
        refused with PersonChanged, not overwritten."""
        async with self.db.write() as session:
            await _require_member(session, chat_id, person_id)
            if expected_revision is not None:
                await _check_name_unchanged(session, chat_id, person_id, expected_revision)
            taken = await taken_names(session, chat_id, except_person=person_id)
            vetted = vet_suggested_name(name, taken, max_chars=self.max_name_chars)
            if vetted is None:
                why = name_refusal(name, taken, max_chars=self.max_name_chars)
                raise PersonAdminError(f"cannot rename to “{shown_name(name)}”: {why}")
            await store.set_person_name(
                session, chat_id, person_id, vetted, source="admin", time=store.ts(now), reason=reason
            )
            await store.add_alias(session, person_id, chat_id, vetted, "admin", time=store.ts(now))
            return vetted

    async def add_alias(self, chat_id: int | None, person_id: int, alias: str, *, now: datetime) -> None:
        """Add an alias (in a chat, or global with chat_id None)."""
        check_alias(alias)
        async with self.db.write() as session:
            await store.add_alias(session, person_id, chat_id, alias, "admin", time=store.ts(now))
            await store.bump_version(session, chat_id)

    async def remove_alias(self, chat_id: int, person_id: int, alias: str) -> int:
        """Remove an alias of the person visible in a chat (its chat row and a global one)."""
        async with self.db.write() as session:
            result = await session.execute(
                delete(PersonAlias).where(
                    PersonAlias.person_id == person_id,
                    PersonAlias.alias_key == name_key(alias),
                    (PersonAlias.chat_id == chat_id) | PersonAlias.chat_id.is_(None),
                )
            )
            await store.bump_version(session, chat_id)
            await store.bump_version(session, None)
        self.on_change()
        return rows_changed(result)

    async def set_fact(
        self, chat_id: int | None, person_id: int, key: str, value: str, *, now: datetime
    ) -> None:
        """Set a fact by hand (source "admin"); the previous values of the key are superseded, and
        none of them is learnt back from what the person said before (`fact_edits`)."""
        check_fact(key, value)
        when = store.ts(now)
        replaced = (
            PersonFact.person_id == person_id,
            PersonFact.key == key,
            PersonFact.superseded_at.is_(None),
            PersonFact.chat_id.is_(None) if chat_id is None else PersonFact.chat_id == chat_id,
        )
        async with self.db.write() as session:
            await leave_unread(session, await _learnt_from(session, *replaced))
            await session.execute(update(PersonFact).where(*replaced).values(superseded_at=when))
            session.add(_admin_fact(chat_id, person_id, key, value, when))
            if chat_id is not None:
                await note_fact_edit(session, chat_id, person_id, key.strip(), None, when)

    async def add_fact(
        self, chat_id: int | None, person_id: int, key: str, value: str, *, now: datetime
    ) -> bool:
        """Add one value of a key by hand (source "admin"), keeping the others (a person likes several
        things); False when the person already holds it. A key holding one value at a time (location,
        age, favorite:…) is refused: setting it replaces the value it holds."""
        check_addable(key, value)
        held = (
            PersonFact.person_id == person_id,
            PersonFact.key == key.strip(),
            PersonFact.superseded_at.is_(None),
            PersonFact.chat_id.is_(None) if chat_id is None else PersonFact.chat_id == chat_id,
        )
        async with self.db.write() as session:
            values = (await session.scalars(select(PersonFact.value).where(*held))).all()
            if any(same_value(v, value) for v in values):
                return False
            session.add(_admin_fact(chat_id, person_id, key, value, store.ts(now)))
            return True

    async def remove_fact(
        self, chat_id: int, person_id: int, key: str, value: str | None = None, *, now: datetime
    ) -> int:
        """Delete the facts of one key (of that `value` only, when given; current and superseded)
        visible in a chat; what the person said before `now` is not learnt back (`fact_edits`).
        Returns how many rows went; a `value` the person does not hold is refused (`check_removable`)."""
        visible = (
            PersonFact.person_id == person_id,
            PersonFact.key == key,
            (PersonFact.chat_id == chat_id) | PersonFact.chat_id.is_(None),
        )
        async with self.db.write() as session:
            rows = (await session.execute(select(PersonFact.id, PersonFact.value).where(*visible))).all()
            check_removable(key, value, (held for _, held in rows))
            removed = PersonFact.id.in_([i for i, held in rows if value is None or same_value(held, value)])
            await leave_unread(session, await _learnt_from(session, removed))
            await note_fact_edit(session, chat_id, person_id, key, value, store.ts(now))
            return rows_changed(await session.execute(delete(PersonFact).where(removed)))

    async def merge(self, survivor_id: int, merged_id: int) -> None:
        """Merge `merged_id` into `survivor_id` (two accounts of one human, or a duplicate): its
        aliases, facts, timeline, memberships, names, messages, preference documents and places among
        topic participants move to the survivor, and the merged person row is deleted; the account
        stays routed to the survivor (`PersonAccount`), so its later messages and mentions are
        theirs. Where both have a name in a chat, the survivor's stays; facts are folded as if one
        person had stated them (a value both hold is kept once, an older value of a single-valued key
        is superseded); a request to be forgotten made as either applies to the survivor, and so does an
        admin's removal of a fact (`fact_edits`): it is not learnt back from what either said before it."""
        if survivor_id == merged_id:
            raise PersonAdminError("cannot merge a person into themselves")
        async with self.db.write() as session:
            survivor = await session.get(Person, survivor_id)
            merged = await session.get(Person, merged_id)
            if survivor is None or merged is None:
                raise PersonAdminError(f"no person {survivor_id if survivor is None else merged_id}")
            check_mergeable(survivor, merged)
            await _fold_facts(session, survivor_id, merged_id)
            for table in (PersonFact, PersonTimelineEntry):
                await session.execute(
                    update(table).where(table.person_id == merged_id).values(person_id=survivor_id)
                )
            for model in (Message, PreferenceDoc):
                await session.execute(
                    update(model).where(model.person_id == merged_id).values(person_id=survivor_id)
                )
            await _move_topic_participants(session, survivor_id, merged_id)
            await _move_aliases(session, survivor_id, merged_id)
            chats = await _move_memberships(session, survivor_id, merged_id)
            await session.execute(
                update(PersonChatName)
                .where(
                    PersonChatName.person_id == merged_id,
                    PersonChatName.chat_id.not_in(
                        select(PersonChatName.chat_id).where(PersonChatName.person_id == survivor_id)
                    ),
                )
                .values(person_id=survivor_id)
            )
            await _move_accounts(session, survivor, merged)
            await _move_forget_request(session, survivor_id, merged_id)
            await move_fact_edits(session, survivor_id, merged_id)
            await move_sightings(session, survivor_id, merged_id)
            survivor.first_seen = min(survivor.first_seen, merged.first_seen)
            survivor.last_seen = max(survivor.last_seen, merged.last_seen)
            survivor.message_count += merged.message_count
            survivor.person_name = survivor.person_name or merged.person_name
            await session.delete(merged)
            await session.flush()
            for chat_id in chats:
                await store.bump_version(session, chat_id)
            await store.bump_version(session, None)
        self.on_change()

    async def forget(self, person_id: int, *, remove_messages: bool, now: datetime) -> ForgetReport:
        """Delete what was learnt about a person (see the module docstring)."""
        async with self.db.write() as session:
            person = await session.get(Person, person_id)
            if person is None:
                raise PersonAdminError(f"no person {person_id}")
            check_forgettable(person_id, person.platform_user_id, person.is_bot)
            counts: list[int] = []
            for table in (PersonFact, PersonTimelineEntry, PersonAlias, PersonChatName):
                result = await session.execute(delete(table).where(table.person_id == person_id))
                counts.append(rows_changed(result))
            chats = list(
                (
                    await session.scalars(select(ChatMember.chat_id).where(ChatMember.person_id == person_id))
                ).all()
            )
            await session.execute(update(ChatMember).where(ChatMember.person_id == person_id).values(card=""))
            person.person_name = None
            person.nickname = ""
            # Preference documents are facts distilled from their words: they go with the facts.
            docs = list(
                (
                    await session.scalars(
                        select(PreferenceDoc.id).where(PreferenceDoc.person_id == person_id)
                    )
                ).all()
            )
            await unindex_rows(session, PREFERENCE_FTS, docs)
            await drop_vectors(session, "preference", docs)
            await session.execute(delete(PreferenceDoc).where(PreferenceDoc.id.in_(docs)))
            mark = await newest_message_id(session)
            removed = 0
            if remove_messages:
                removed = await _erase_their_messages(session, person_id, store.ts(now))
            else:
                await _unname_their_messages(session, person_id)
            until = store.ts(now) if remove_messages else None
            stmt = insert(PersonForgotten).values(
                person_id=person_id,
                time=store.ts(now),
                removed_messages=removed,
                messages_removed_until=until,
                last_message_id=mark,
            )
            await session.execute(
                stmt.on_conflict_do_update(
                    index_elements=[PersonForgotten.person_id],
                    set_={
                        "time": stmt.excluded.time,
                        "removed_messages": stmt.excluded.removed_messages,
                        "last_message_id": stmt.excluded.last_message_id,
                        # a later forget that keeps messages does not undo an earlier deletion
                        "messages_removed_until": func.coalesce(
                            stmt.excluded.messages_removed_until, PersonForgotten.messages_removed_until
                        ),
                    },
                )
            )
            for chat_id in chats:
                await store.bump_version(session, chat_id)
            await store.bump_version(session, None)
        self.on_change()
        facts, timeline, aliases, names = counts
        return ForgetReport(person_id, facts, timeline, aliases, names, removed)


async def _erase_their_messages(session: AsyncSession, person_id: int, now: float) -> int:
    """Delete every message of the person; returns how many. Those dated after `now` (a wrong clock,
    an import of a later export) get a deletion mark, so that no import brings them back: the
    request's `messages_removed_until` keeps out only those dated up to it."""
    rows = (
        await session.execute(
            select(Message.id, Message.chat_id, Message.platform_message_id, Message.time).where(
                Message.person_id == person_id
            )
        )
    ).all()
    for _, chat_id, platform_id, when in rows:
        if when > now:
            await remember_deleted(session, chat_id, platform_id, now)
    await erase_messages(session, [row[0] for row in rows], now)
    return len(rows)


async def _unname_their_messages(session: AsyncSession, person_id: int) -> None:
    """Take off the messages a person is kept with the names they were sent under (nickname and
    group card), and off what was built from them: the topics packed from them (`rename_sources`) and
    the vectors of the turn windows holding them (a window is embedded with its speakers' names), for
    the backfill to embed again."""
    ids = list((await session.scalars(select(Message.id).where(Message.person_id == person_id))).all())
    await session.execute(
        update(Message).where(Message.person_id == person_id).values(sender_name="", sender_card="")
    )
    for start in range(0, len(ids), ERASE_BATCH):
        batch = ids[start : start + ERASE_BATCH]
        await rename_sources(session, batch)
        await drop_vectors(session, "message", await windows_touching(session, batch))


def _admin_fact(chat_id: int | None, person_id: int, key: str, value: str, when: float) -> PersonFact:
    """A fact set by hand."""
    return PersonFact(
        person_id=person_id,
        chat_id=chat_id,
        key=key.strip(),
        value=value.strip(),
        source="admin",
        confidence=1.0,
        evidence="",
        time=when,
        seen_message_ids=[],
    )


async def _learnt_from(session: AsyncSession, *where: ColumnElement[bool]) -> list[int]:
    """The messages the facts matching `where` were learnt from (where each was found, and repeated)."""
    rows = await session.execute(select(PersonFact.message_id, PersonFact.seen_message_ids).where(*where))
    return sorted({i for found, seen in rows.all() for i in (found, *(seen or ())) if i is not None})


async def _require_member(session: AsyncSession, chat_id: int, person_id: int) -> None:
    found = await session.get(ChatMember, (chat_id, person_id))
    if found is None:
        raise PersonAdminError(f"person {person_id} is not a member of chat {chat_id}")


async def _check_name_unchanged(session: AsyncSession, chat_id: int, person_id: int, revision: int) -> None:
    current = await store.person_record(session, chat_id, person_id, timeline_limit=0)
    if current is not None and current.name_revision != revision:
        raise PersonChanged(
            f"#{person_id} is called “{shown_name(current.name)}” in this chat now: the name was changed "
            "since you opened the page; nothing was saved: reload it and rename again"
        )


async def _move_aliases(session: AsyncSession, survivor_id: int, merged_id: int) -> None:
    """Re-own the merged person's aliases; where the survivor has the same alias, fold counts."""
    for alias in list(
        (await session.scalars(select(PersonAlias).where(PersonAlias.person_id == merged_id))).all()
    ):
        await fold_alias(session, alias, survivor_id, alias.chat_id)
    await session.flush()


async def fold_alias(session: AsyncSession, alias: PersonAlias, person_id: int, chat_id: int | None) -> None:
    """Give `alias` to `person_id` in the scope `chat_id` (None: global); where they already have the
    same alias (key and source) there, its count and seen times fold into that row instead."""
    same = (
        await session.scalars(
            select(PersonAlias).where(
                PersonAlias.id != alias.id,
                PersonAlias.person_id == person_id,
                func.ifnull(PersonAlias.chat_id, 0) == (chat_id or 0),
                PersonAlias.alias_key == alias.alias_key,
                PersonAlias.source == alias.source,
            )
        )
    ).first()
    if same is None:
        alias.person_id, alias.chat_id = person_id, chat_id
        return
    kept = Sightings(same.count, same.first_seen, same.last_seen)
    same.count, same.first_seen, same.last_seen = kept.folded(
        Sightings(alias.count, alias.first_seen, alias.last_seen)
    ).values()
    await session.delete(alias)


async def _fold_facts(session: AsyncSession, survivor_id: int, merged_id: int) -> None:
    """Fold the merged person's current facts into the survivor's, scope by scope (`fold_facts`)."""
    rows = list(
        (
            await session.scalars(
                select(PersonFact)
                .where(PersonFact.person_id.in_([survivor_id, merged_id]), PersonFact.superseded_at.is_(None))
                .order_by(PersonFact.time, PersonFact.id)
            )
        ).all()
    )
    scopes: dict[int | None, list[PersonFact]] = {}
    for row in rows:
        scopes.setdefault(row.chat_id, []).append(row)
    for scoped in scopes.values():
        await fold_facts(session, scoped, lambda row: row.person_id == survivor_id)
    await session.flush()


async def fold_facts(
    session: AsyncSession, rows: Sequence[PersonFact], kept: Callable[[PersonFact], bool]
) -> None:
    """Fold current facts that are to become one person's in one scope, as if they had been learnt by
    one person (`facts.merge_facts`): the `kept` rows are held, the others come in. A value both hold
    is kept once (the held row, with the other's messages among its repeats), and of two values of a
    single-valued key the older is superseded by the newer. Rows that come in and stay are left for
    the caller to re-own or re-scope."""
    held = {_fact_ident(store.to_fact(r)): r for r in rows}
    as_one = [(r, replace(store.to_fact(r), person_id="")) for r in rows]
    result = merge_facts([f for r, f in as_one if kept(r)], [f for r, f in as_one if not kept(r)])
    kept_facts = {_fact_ident(f): f for f in result.current}
    for fact in result.superseded:
        row = held[_fact_ident(fact)]
        row.superseded_at = store.ts(fact.superseded_at or fact.time)
        by = fact.superseded_by or ""
        row.superseded_by = int(by) if by.isdigit() else None
    retired = {_fact_ident(f) for f in result.superseded}
    by_value = {(f.key, normalize(f.value)): held[ident] for ident, f in kept_facts.items()}
    for ident, row in held.items():
        current = kept_facts.get(ident)
        if current is not None:
            repeats = [int(k) for k in current.seen_keys if k.isdigit()]
            row.seen_message_ids = list(dict.fromkeys([*(row.seen_message_ids or ()), *repeats]))
        elif ident not in retired:
            # The same value as a held fact: it becomes one of that fact's repeats.
            same = by_value[(row.key, normalize(row.value))]
            same.seen_message_ids = list(dict.fromkeys([*same.seen_message_ids, *row.seen_message_ids]))
            await session.delete(row)


def _fact_ident(fact: Fact) -> tuple[str, str, str]:
    return (fact.message_key, fact.key, normalize(fact.value))


async def _move_accounts(session: AsyncSession, survivor: Person, merged: Person) -> None:
    """Route the merged account, and any accounts merged into it before, to the survivor."""
    await session.execute(
        update(PersonAccount).where(PersonAccount.person_id == merged.id).values(person_id=survivor.id)
    )
    stmt = insert(PersonAccount).values(
        platform=merged.platform,
        platform_user_id=merged.platform_user_id,
        person_id=survivor.id,
        merged_at=time.time(),
    )
    await session.execute(
        stmt.on_conflict_do_update(
            index_elements=[PersonAccount.platform, PersonAccount.platform_user_id],
            set_={"person_id": stmt.excluded.person_id, "merged_at": stmt.excluded.merged_at},
        )
    )


async def _move_forget_request(session: AsyncSession, survivor_id: int, merged_id: int) -> None:
    """A request to be forgotten made as the merged person stays with the human (the survivor; of two
    requests the later one counts, its time and its message mark), not behind on an id SQLite may give
    the next new person."""
    request = await session.get(PersonForgotten, merged_id)
    if request is None:
        return
    kept = await session.get(PersonForgotten, survivor_id)
    if kept is None:
        session.add(
            PersonForgotten(
                person_id=survivor_id,
                time=request.time,
                removed_messages=request.removed_messages,
                messages_removed_until=request.messages_removed_until,
                last_message_id=request.last_message_id,
            )
        )
    else:
        kept.time = max(kept.time, request.time)
        kept.removed_messages += request.removed_messages
        untils = [t for t in (kept.messages_removed_until, request.messages_removed_until) if t is not None]
        kept.messages_removed_until = max(untils) if untils else None
        marks = [m for m in (kept.last_message_id, request.last_message_id) if m is not None]
        kept.last_message_id = max(marks) if marks else None
    await session.delete(request)


async def _move_memberships(session: AsyncSession, survivor_id: int, merged_id: int) -> list[int]:
    """Fold the merged person's chat memberships into the survivor's; returns the chats touched."""
    chats = []
    for member in list(
        (await session.scalars(select(ChatMember).where(ChatMember.person_id == merged_id))).all()
    ):
        chats.append(member.chat_id)
        await fold_membership(session, member, member.chat_id, survivor_id)
    await session.flush()
    return chats


async def fold_membership(session: AsyncSession, member: ChatMember, chat_id: int, person_id: int) -> None:
    """Make `member` the membership of `person_id` in `chat_id`; where that one exists, the activity
    folds into it (messages summed, the earliest first and latest last seen, its card kept if set, gone
    from the chat when the later of their departures came after the last message of either)."""
    kept = await session.get(ChatMember, (chat_id, person_id))
    if kept is None:
        session.add(
            ChatMember(
                chat_id=chat_id,
                person_id=person_id,
                card=member.card,
                first_seen=member.first_seen,
                last_seen=member.last_seen,
                message_count=member.message_count,
                left_at=member.left_at,
            )
        )
    else:
        kept.message_count, kept.first_seen, kept.last_seen = (
            Sightings(kept.message_count, kept.first_seen, kept.last_seen)
            .folded(Sightings(member.message_count, member.first_seen, member.last_seen))
            .values()
        )
        kept.card = kept.card or member.card
        kept.left_at = folded_departure((kept.left_at, member.left_at), kept.last_seen)
    await session.delete(member)


async def _move_topic_participants(session: AsyncSession, survivor_id: int, merged_id: int) -> None:
    """Rewrite the merged person's id in ChatHistory participant lists (recall filters on them)."""
    mentioned = text(
        "SELECT id FROM chat_history WHERE EXISTS (SELECT 1 FROM json_each(chat_history.participants) j "
        "WHERE j.type = 'object' AND json_extract(j.value, '$.person_id') = :merged)"
    )
    ids = [int(r[0]) for r in await session.execute(mentioned, {"merged": merged_id})]
    for row in (await session.scalars(select(ChatHistory).where(ChatHistory.id.in_(ids)))).all():
        row.participants = [
            {**p, "person_id": survivor_id} if isinstance(p, dict) and p.get("person_id") == merged_id else p
            for p in row.participants
        ]
