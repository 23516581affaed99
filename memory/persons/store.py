"""Reading and writing the people tables inside a session: aliases, per-chat names, facts, timeline.

Every write function takes an open write session (the caller's transaction), so an observer, the
consolidation job and admin edits compose into one atomic change. Reads take any session.
Scope rule everywhere: a person's data in chat C is the rows with chat_id = C plus global rows
(chat_id NULL); rows learnt in another chat are never returned.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.dialects.sqlite import Insert, insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from memory.models import (
    Chat,
    ChatMember,
    Message,
    Person,
    PersonAccount,
    PersonAlias,
    PersonAliasVersion,
    PersonChatName,
    PersonFact,
    PersonTimelineEntry,
)
from memory.persons.aliases import AliasEntry
from memory.persons.card import PersonView, TimelineEntry
from memory.persons.facts import Fact, attributes_of
from memory.persons.names import clean_name, has_cjk, name_key
from memory.persons.naming import DEFAULT_MAX_CHARS, choose_person_name, name_source
from memory.storage.sql import rows_changed
from memory.text import truncate
from memory.types import SegmentKind

GLOBAL = 0
TIMELINE_CHARS = 512  # a timeline line's column; a longer one (two long group cards) is cut
# Which aliases a card shows first: chosen or declared names, then group cards, then nicknames.
_SOURCE_RANK = {"admin": 0, "self": 1, "others": 2, "card": 3, "llm": 4, "nickname": 5}
_STALE_WEIGHT = 0.5
# A hyphen between two Latin letters joins a name ("Mary-Jane"); elsewhere it separates ("孙悦-研二").
_CARD_SEPARATORS = re.compile(r"\s*(?:[｜|丨/／—–~～·•]|(?<![A-Za-z])-|-(?![A-Za-z]))+\s*")
_BRACKETED = re.compile(r"[（(【\[]([^）)】\]]{1,16})[）)】\]]")
_LATIN_WORD = re.compile(r"[A-Za-z][\w'’.-]*")


def ts(time: datetime) -> float:
    return time.timestamp()


def from_ts(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def card_names(card: str) -> list[str]:
    """The names inside a group card, beyond the card itself: "阿红｜前端" → ["阿红"],
    "Tom（汤姆）" → ["Tom", "汤姆"], "孙悦-研二" → ["孙悦"], "Mary-Jane Watson | dps" →
    ["Mary-Jane Watson"]. Cards follow "name + separator + role"."""
    raw = unicodedata.normalize("NFKC", card or "")
    cleaned = clean_name(raw)
    found: list[str] = []
    bare = _BRACKETED.sub(" ", raw).strip()
    head = clean_name(_CARD_SEPARATORS.split(bare, maxsplit=1)[0])
    if len(name_key(head)) >= 2 or has_cjk(head):
        found.append(head)
    # A trailing bracket holds another name ("Tom（汤姆）"); a leading one is a tag ("【管理】小王").
    found.extend(
        clean_name(m.group(1))
        for m in _BRACKETED.finditer(raw)
        if m.start() > 0 and _bracket_names(m.group(1))
    )
    return [n for n in dict.fromkeys(found) if name_key(n) and name_key(n) != name_key(cleaned)]


def _bracket_names(inside: str) -> bool:
    """Whether a card's trailing bracket holds a name: Chinese ("汤姆"), or Latin words each written
    with a capital ("Tommy", "JJ"); not pronouns ("he/him") or a status ("in Lisbon", "afk")."""
    if has_cjk(inside):
        return True
    latin = _LATIN_WORD.findall(inside)
    return "/" not in inside and bool(latin) and all(word[0].isupper() for word in latin)


def first_card_name(card: str) -> str:
    """What naming takes from a group card: the first name inside it ("阿红" of "阿红｜前端"), else the
    card as it is."""
    return next(iter(card_names(card)), card)


def own_words(text: str, segments: Sequence[dict[str, str]] | None) -> str:
    """The sender's own text: only text and mention segments when the message has segments, so a
    quoted reply preview or a forwarded card is never taken for the sender's words."""
    if not segments:
        return text
    kept = (s.get("text", "") for s in segments if s.get("kind") in (SegmentKind.TEXT, SegmentKind.MENTION))
    return "".join(kept)


# ---- versions ---------------------------------------------------------------------------------------


async def bump_version(session: AsyncSession, chat_id: int | None) -> None:
    """Mark the names of a chat (or the global scope) as changed."""
    await session.execute(version_bump(chat_id))


def version_bump(chat_id: int | None) -> Insert:
    """The statement `bump_version` runs, for a caller on a plain connection."""
    stmt = insert(PersonAliasVersion).values(chat_id=chat_id or GLOBAL, version=1)
    return stmt.on_conflict_do_update(
        index_elements=[PersonAliasVersion.chat_id], set_={"version": PersonAliasVersion.version + 1}
    )


async def versions(session: AsyncSession, chat_id: int) -> tuple[int, int]:
    """(chat version, global version)."""
    rows = await session.execute(
        select(PersonAliasVersion.chat_id, PersonAliasVersion.version).where(
            PersonAliasVersion.chat_id.in_([chat_id, GLOBAL])
        )
    )
    found = dict(rows.all())
    return found.get(chat_id, 0), found.get(GLOBAL, 0)


# ---- aliases and names ------------------------------------------------------------------------------


async def add_alias(
    session: AsyncSession,
    person_id: int,
    chat_id: int | None,
    alias: str,
    source: str,
    *,
    time: float,
    weight: float = 1.0,
    message_id: int | None = None,
) -> bool:
    """Record that `person_id` is called `alias` (in `chat_id`, or globally when None). Returns True
    when the alias is new for that scope and source (the caller bumps the version)."""
    alias = clean_name(alias)
    key = name_key(alias)
    if not key:
        return False
    stmt = (
        insert(PersonAlias)
        .values(
            person_id=person_id,
            chat_id=chat_id,
            alias=alias,
            alias_key=key,
            source=source,
            weight=weight,
            count=1,
            first_seen=time,
            last_seen=time,
            message_id=message_id,
        )
        .on_conflict_do_nothing()
    )
    result = await session.execute(stmt)
    if rows_changed(result):
        return True
    await session.execute(
        update(PersonAlias)
        .where(
            PersonAlias.person_id == person_id,
            func.ifnull(PersonAlias.chat_id, 0) == (chat_id or GLOBAL),
            PersonAlias.alias_key == key,
            PersonAlias.source == source,
        )
        .values(
            last_seen=func.max(PersonAlias.last_seen, time),
            count=PersonAlias.count + 1,
            weight=func.max(PersonAlias.weight, weight),
        )
    )
    return False


def _in_scope(column: InstrumentedAttribute[int | None], chat_id: int) -> ColumnElement[bool]:
    return or_(column == chat_id, column.is_(None))


async def chat_names(session: AsyncSession, chat_id: int) -> dict[int, str]:
    """person_id → person_name in a chat."""
    rows = await session.execute(
        select(PersonChatName.person_id, PersonChatName.person_name).where(PersonChatName.chat_id == chat_id)
    )
    return dict(rows.all())


async def name_at_first_sight(
    session: AsyncSession,
    chat_id: int,
    person_id: int,
    first: str,
    nickname: str,
    user_id: str,
    *,
    time: float,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> None:
    """Name a person in a chat as on their first message there: `first` (the name in their group card),
    else their nickname, else their id, made unique among the chat's other names."""
    taken = [n for pid, n in (await chat_names(session, chat_id)).items() if pid != person_id]
    name = choose_person_name(first, nickname, user_id, taken, max_chars=max_chars)
    await set_person_name(session, chat_id, person_id, name, source=name_source(first, nickname), time=time)


async def set_person_name(
    session: AsyncSession,
    chat_id: int,
    person_id: int,
    name: str,
    *,
    source: str,
    time: float,
    reason: str = "",
) -> None:
    """Set the name the bot uses for a person in a chat (the caller checked it is free)."""
    stmt = insert(PersonChatName).values(
        chat_id=chat_id,
        person_id=person_id,
        person_name=name,
        name_key=name_key(name),
        source=source,
        reason=reason,
        updated_at=time,
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[PersonChatName.chat_id, PersonChatName.person_id],
        set_={
            "person_name": stmt.excluded.person_name,
            "name_key": stmt.excluded.name_key,
            "source": stmt.excluded.source,
            "reason": stmt.excluded.reason,
            "updated_at": stmt.excluded.updated_at,
        },
    )
    await session.execute(stmt)
    await session.execute(
        update(Person).where(Person.id == person_id, Person.person_name.is_(None)).values(person_name=name)
    )
    await bump_version(session, chat_id)


async def person_ids_for(session: AsyncSession, platform: str, user_ids: Iterable[str]) -> dict[str, int]:
    """Platform user id → person id, for the ids that are known (an account merged into another
    person maps to that person)."""
    wanted = list(dict.fromkeys(user_ids))
    if not wanted:
        return {}
    own = select(Person.platform_user_id, Person.id).where(
        Person.platform == platform, Person.platform_user_id.in_(wanted)
    )
    merged = select(PersonAccount.platform_user_id, PersonAccount.person_id).where(
        PersonAccount.platform == platform, PersonAccount.platform_user_id.in_(wanted)
    )
    return {user: int(person) for user, person in (await session.execute(own.union_all(merged))).all()}


async def senders_of(
    session: AsyncSession, chat_id: int, platform_message_ids: Iterable[str]
) -> dict[str, int]:
    """Platform message id → the person who sent it, within one chat."""
    wanted = list(dict.fromkeys(platform_message_ids))
    if not wanted:
        return {}
    rows = await session.execute(
        select(Message.platform_message_id, Message.person_id).where(
            Message.chat_id == chat_id, Message.platform_message_id.in_(wanted)
        )
    )
    return {mid: pid for mid, pid in rows.all() if pid is not None}


async def platform_of(session: AsyncSession, chat_id: int) -> str:
    return (await session.execute(select(Chat.platform).where(Chat.id == chat_id))).scalar_one()


async def alias_entries(
    session: AsyncSession, chat_id: int, config_sources: Sequence[str]
) -> list[AliasEntry]:
    """The alias index entries of a chat's members: their person_name there (weight 1), and their
    aliases of that chat or global; the newest nickname and card count fully, older ones half."""
    members = select(ChatMember.person_id).where(ChatMember.chat_id == chat_id)
    entries = [
        AliasEntry(str(pid), name, "person_name", 1.0)
        for pid, name in (await chat_names(session, chat_id)).items()
    ]
    rows = await session.execute(
        select(PersonAlias)
        .where(
            PersonAlias.person_id.in_(members),
            _in_scope(PersonAlias.chat_id, chat_id),
            PersonAlias.source.in_([*config_sources, "admin"]),
        )
        .order_by(PersonAlias.person_id, PersonAlias.source, PersonAlias.last_seen.desc())
    )
    newest: dict[tuple[int, str], float] = {}
    for alias in rows.scalars():
        weight = alias.weight
        latest = newest.setdefault((alias.person_id, alias.source), alias.last_seen)
        if alias.source in ("nickname", "card") and alias.last_seen < latest:
            weight = min(weight, _STALE_WEIGHT)
        entries.append(AliasEntry(str(alias.person_id), alias.alias, alias.source, weight))
    return entries


async def aliases_of(session: AsyncSession, chat_id: int, person_id: int) -> list[PersonAlias]:
    """A person's aliases visible in a chat, best first (declared, cards, nicknames; newest first)."""
    rows = await session.execute(
        select(PersonAlias).where(
            PersonAlias.person_id == person_id,
            _in_scope(PersonAlias.chat_id, chat_id),
        )
    )
    found = list(rows.scalars())
    found.sort(key=lambda a: (_SOURCE_RANK.get(a.source, 9), -a.last_seen, a.id))
    return found


# ---- facts and timeline -----------------------------------------------------------------------------


def to_fact(row: PersonFact) -> Fact:
    """A stored fact as the pure `Fact` (message keys are message ids as strings)."""
    return Fact(
        person_id=str(row.person_id),
        key=row.key,
        value=row.value,
        message_key=str(row.message_id) if row.message_id is not None else f"fact:{row.id}",
        time=from_ts(row.time),
        span=(row.span_start, row.span_end),
        text=row.evidence,
        source=row.source,
        confidence=row.confidence,
        superseded_at=from_ts(row.superseded_at) if row.superseded_at is not None else None,
        superseded_by=str(row.superseded_by) if row.superseded_by is not None else None,
        seen_keys=tuple(str(m) for m in row.seen_message_ids or ()),
    )


async def facts_of(
    session: AsyncSession, chat_id: int | None, person_ids: Iterable[int], *, current_only: bool = True
) -> list[PersonFact]:
    """Facts of these people in a chat's scope (exactly the chat's rows plus global ones)."""
    query = select(PersonFact).where(PersonFact.person_id.in_(list(person_ids)))
    if chat_id is not None:
        query = query.where(_in_scope(PersonFact.chat_id, chat_id))
    if current_only:
        query = query.where(PersonFact.superseded_at.is_(None))
    return list((await session.scalars(query.order_by(PersonFact.time, PersonFact.id))).all())


async def add_timeline(
    session: AsyncSession,
    person_id: int,
    chat_id: int | None,
    time: float,
    text: str,
    message_ids: Sequence[int],
    kind: str = "event",
) -> None:
    session.add(
        PersonTimelineEntry(
            person_id=person_id,
            chat_id=chat_id,
            time=time,
            kind=kind,
            text=truncate(text, TIMELINE_CHARS),
            message_ids=list(message_ids),
        )
    )


async def timeline_of(
    session: AsyncSession, chat_id: int, person_id: int, limit: int = 20
) -> list[PersonTimelineEntry]:
    rows = await session.scalars(
        select(PersonTimelineEntry)
        .where(
            PersonTimelineEntry.person_id == person_id,
            _in_scope(PersonTimelineEntry.chat_id, chat_id),
        )
        .order_by(PersonTimelineEntry.time.desc(), PersonTimelineEntry.id.desc())
        .limit(limit)
    )
    return list(rows.all())


# ---- the card view ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PersonRecord:
    """Everything a chat knows about one person: the card view plus the stored rows behind it."""

    person_id: int
    platform_user_id: str
    nickname: str
    card: str
    is_bot: bool
    message_count: int
    last_seen: datetime
    view: PersonView
    aliases: list[PersonAlias]
    facts: list[PersonFact]
    superseded: list[PersonFact]
    timeline: list[PersonTimelineEntry]
    left_at: datetime | None = None  # when the platform said they left the chat (memory.membership)

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def name_revision(self) -> int:
        """The revision of the name (`name_revision`), for a form that renames the person."""
        return name_revision(self.name)


def name_revision(name: str) -> int:
    """A number that changes when a person's name in a chat changes. No counter is stored for names:
    it is read from the name itself, so a rename back to the name a page showed is no conflict. The
    console's rename form passes it back (`PersonAdmin.rename`) so that a rename made meanwhile, by
    another admin or from the chat, is not overwritten unseen."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:6], "big")


async def person_record(
    session: AsyncSession, chat_id: int, person_id: int, *, timeline_limit: int = 20
) -> PersonRecord | None:
    """The person as chat `chat_id` knows them, or None when they are not a member of it (one who left
    it is still found, with `left_at`: what they said stays the chat's record)."""
    row = (
        await session.execute(
            select(Person, ChatMember, PersonChatName.person_name)
            .join(ChatMember, and_(ChatMember.person_id == Person.id, ChatMember.chat_id == chat_id))
            .outerjoin(
                PersonChatName,
                and_(PersonChatName.person_id == Person.id, PersonChatName.chat_id == chat_id),
            )
            .where(Person.id == person_id)
        )
    ).first()
    if row is None:
        return None
    person, member, chat_name = row
    name = chat_name or member.card or person.nickname or person.platform_user_id
    aliases = await aliases_of(session, chat_id, person_id)
    all_facts = await facts_of(session, chat_id, [person_id], current_only=False)
    current = [f for f in all_facts if f.superseded_at is None]
    timeline = await timeline_of(session, chat_id, person_id, timeline_limit)
    view = PersonView(
        person_id=str(person_id),
        name=name,
        aliases=[a.alias for a in aliases if name_key(a.alias) != name_key(name)],
        attributes=attributes_of(to_fact(f) for f in current),
        timeline=[
            TimelineEntry(from_ts(t.time), t.text, tuple(str(m) for m in t.message_ids)) for t in timeline
        ],
        left=member.left_at is not None,
    )
    return PersonRecord(
        person_id=person_id,
        platform_user_id=person.platform_user_id,
        nickname=person.nickname,
        card=member.card,
        is_bot=person.is_bot,
        message_count=member.message_count,
        last_seen=from_ts(member.last_seen),
        view=view,
        aliases=aliases,
        facts=current,
        superseded=[f for f in all_facts if f.superseded_at is not None],
        timeline=timeline,
        left_at=None if member.left_at is None else from_ts(member.left_at),
    )


async def member_ids(
    session: AsyncSession, chat_id: int, *, limit: int | None = None, offset: int = 0
) -> list[int]:
    """A chat's members, most active first (`limit` of them from `offset`, or all)."""
    rows = await session.scalars(
        select(ChatMember.person_id)
        .where(ChatMember.chat_id == chat_id)
        .order_by(ChatMember.message_count.desc(), ChatMember.person_id)
        .limit(limit)
        .offset(offset or None)
    )
    return list(rows.all())
