"""What people's memory learnt from single messages, taken back when those messages are deleted on the
platform (`memory.message_removal`).

A fact whose message is gone keeps standing on a later repeat when it has one, else goes; a fact that a
gone message superseded (a move, a retraction) is current again unless a fact still current says
otherwise; a timeline event loses the message and goes with its last one, a change ("杭州 → 上海", which
quotes the messages of both values) with either of its two; an alias the person was known by only
through that message goes. Preference documents are removed by `message_removal` with the
message itself (they are recall rows, with an index and vectors of their own).
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.models import (
    ChatMember,
    Message,
    Person,
    PersonAlias,
    PersonChatName,
    PersonFact,
    PersonTimelineEntry,
)
from memory.persons import store
from memory.persons.facts import FAVORITE_PREFIX, OPPOSITES, SINGLE_VALUED
from memory.persons.names import name_key
from memory.storage.sql import rows_naming
from memory.text import normalize, truncate

EVIDENCE_CHARS = 120  # how much of a repeat's text stands as a fact's evidence once its message is gone


async def drop_message_evidence(session: AsyncSession, message_ids: Collection[int]) -> set[int | None]:
    """Take these messages (about to be deleted) out of facts, timeline and aliases, inside the caller's
    transaction. Returns the chat scopes (None: global) whose people changed."""
    gone = set(message_ids)
    if not gone:
        return set()
    changed: set[int | None] = set()
    changed |= await _drop_facts(session, gone)
    await session.flush()
    changed |= await _restore_superseded(session, gone)
    changed |= await _drop_timeline(session, gone)
    aliases = list((await session.scalars(select(PersonAlias).where(PersonAlias.message_id.in_(gone)))).all())
    for alias in aliases:
        changed.add(alias.chat_id)
        if alias.count <= 1:
            await session.delete(alias)
            if alias.source == "self" and alias.chat_id is not None:
                await _drop_declared_name(session, alias.chat_id, alias.person_id, alias.alias)
        else:
            alias.count -= 1
            alias.message_id = None
    await session.flush()
    return changed


async def _drop_declared_name(session: AsyncSession, chat_id: int, person_id: int, declared: str) -> None:
    """A person who took the name they declared ("叫我X") as their name in a chat is named again as on
    their first message there: from their group card, else their nickname, else their id."""
    current = await session.get(PersonChatName, (chat_id, person_id))
    if current is None or current.source != "self" or current.name_key != name_key(declared):
        return
    person = await session.get(Person, person_id)
    member = await session.get(ChatMember, (chat_id, person_id))
    if person is None:
        return
    first = store.first_card_name(member.card if member is not None else "")
    await store.name_at_first_sight(
        session, chat_id, person_id, first, person.nickname, person.platform_user_id, time=current.updated_at
    )


async def _drop_facts(session: AsyncSession, gone: set[int]) -> set[int | None]:
    changed: set[int | None] = set()
    named = await rows_naming(session, "person_facts", "seen_message_ids", sorted(gone))
    rows = await session.scalars(
        select(PersonFact).where(or_(PersonFact.message_id.in_(gone), PersonFact.id.in_(named)))
    )
    for fact in rows.all():
        seen = [int(i) for i in fact.seen_message_ids or ()]
        kept = [i for i in seen if i not in gone]
        if fact.message_id in gone:
            changed.add(fact.chat_id)
            repeat = await session.get(Message, kept[0]) if kept else None
            if repeat is None:
                await session.delete(fact)
                continue
            fact.message_id, fact.seen_message_ids = repeat.id, kept[1:]
            fact.evidence = truncate(repeat.text, EVIDENCE_CHARS)
            fact.span_start, fact.span_end = 0, len(fact.evidence)
            fact.time = repeat.time
        elif len(kept) != len(seen):
            changed.add(fact.chat_id)
            fact.seen_message_ids = kept
    return changed


async def _restore_superseded(session: AsyncSession, gone: set[int]) -> set[int | None]:
    """Facts retired by a gone message come back, unless a current fact of the same person and scope
    (those of the gone messages already dropped, or standing on a repeat) holds the same value, the
    opposite like of it, or (single-valued keys) another value."""
    retired = list(
        (
            await session.scalars(
                select(PersonFact).where(
                    PersonFact.superseded_by.in_(gone), PersonFact.superseded_at.is_not(None)
                )
            )
        ).all()
    )
    changed: set[int | None] = set()
    for fact in retired:
        keys = [fact.key, *([OPPOSITES[fact.key]] if fact.key in OPPOSITES else [])]
        current = (
            await session.scalars(
                select(PersonFact).where(
                    PersonFact.person_id == fact.person_id,
                    or_(PersonFact.chat_id == fact.chat_id, PersonFact.chat_id.is_(None))
                    if fact.chat_id is not None
                    else PersonFact.chat_id.is_(None),
                    PersonFact.key.in_(keys),
                    PersonFact.superseded_at.is_(None),
                )
            )
        ).all()
        single = fact.key in SINGLE_VALUED or fact.key.startswith(FAVORITE_PREFIX)
        if any(
            (single and other.key == fact.key) or normalize(other.value) == normalize(fact.value)
            for other in current
        ):
            continue
        fact.superseded_at, fact.superseded_by = None, None
        changed.add(fact.chat_id)
    return changed


async def _drop_timeline(session: AsyncSession, gone: set[int]) -> set[int | None]:
    changed: set[int | None] = set()
    named = await rows_naming(session, "person_timeline", "message_ids", sorted(gone))
    entries = await session.scalars(select(PersonTimelineEntry).where(PersonTimelineEntry.id.in_(named)))
    for entry in entries.all():
        ids = [int(i) for i in entry.message_ids or ()]
        kept = [i for i in ids if i not in gone]
        if len(kept) == len(ids):
            continue
        changed.add(entry.chat_id)
        if kept and entry.kind != "change":
            entry.message_ids = kept
        else:
            await session.execute(delete(PersonTimelineEntry).where(PersonTimelineEntry.id == entry.id))
    return changed
