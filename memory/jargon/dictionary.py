"""The jargon dictionary in the database: the service functions the mining job, the CLI, the reply
path and the admin console share.

Every function takes an open session (the caller owns the transaction) and plain values. Terms are
keyed by `memory.text.normalize` (NFKC + casefold) per scope: `chat_id` NULL is the global scope, a
chat id is that chat's own dictionary. The scope setting says where mining stores a term (the chat's
own dictionary, or the global one every chat shares); under either, a chat sees the global entries
and its own (mined there, or added by an admin for that chat), never another chat's, and its own
entry of a term, once explainable or rejected, hides the global entry of the same term.

Admin decisions win: an approved or rejected entry, or one whose meaning was set by hand
(provenance "manual"), is never changed by inference. Every admin action leaves a `jargon_reviews` row.

A meaning a member gave in chat ("开炉就是去吃火锅", provenance "member", see `member_meaning`) is kept
in that chat's own dictionary: it is explained there only. It fills an entry without a meaning and
gives way to the model (which sees it among the evidence, and may replace it) and to an admin.
"""

from __future__ import annotations

import json
import logging
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from sqlalchemy import ColumnElement, Select, and_, case, delete, exists, func, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from memory import messages
from memory.changed import ChangedMeanwhile
from memory.jargon.explanations import MemberMeaning
from memory.jargon.types import Candidate
from memory.messages import StoredMessage
from memory.models import Jargon, JargonChatCount, JargonEvidence, JargonReview, Message
from memory.models.jargon import STATUSES
from memory.storage.sql import json_values
from memory.text import drop_invisible, lone_surrogate_at, normalize, truncate
from memory.types import clean_text

log = logging.getLogger(__name__)

Scope = Literal["global", "chat"]
Decision = Literal["approve", "reject"]
DECISIONS: tuple[Decision, ...] = ("approve", "reject")
EXPLAINABLE = ("approved", "inferred")
MAX_TERM_CHARS = 64
MAX_MEANING_CHARS = 2000
MEMBER = "member"
"""The provenance of a meaning a member gave in chat."""
MEMBER_ACTION = "member explained"
"""The review trail's action for a member's meaning; its `new` holds the message's `message_id`."""


class JargonError(ValueError):
    """A bad request to the dictionary (unknown entry, empty term, bad status...)."""


class JargonChanged(JargonError, ChangedMeanwhile):
    """An entry changed (a decision, an edit, inference) since the revision the caller saw."""


@dataclass(frozen=True, slots=True)
class EntryView:
    """A dictionary entry as read back. As admins read it (`get`, `list_entries`, `decide`, `edit`), a
    chat's own entry of a term the global dictionary also holds names that entry (`shared_id`) and
    counts the term as its chat used it (`_SEEN_COUNT`); read otherwise (the reply path, inference),
    `count` is the row's own and `shared_id` None."""

    id: int
    chat_id: int | None
    content: str
    meaning: str
    is_jargon: bool | None
    count: int
    last_inference_count: int
    status: str
    provenance: str
    decided_by: str | None
    decided_at: float | None
    created_at: float
    updated_at: float
    shared_id: int | None = None

    @property
    def explainable(self) -> bool:
        """True when the reply path may explain this term."""
        if not self.meaning or self.status not in EXPLAINABLE:
            return False
        return self.status == "approved" or self.is_jargon is not False

    def to_json(self) -> dict[str, Any]:
        """The JSON form (CLI, export, web console)."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Evidence:
    """One evidence message with the messages around it, read from `messages` now."""

    message: StoredMessage
    context: list[StoredMessage]


def view(row: Jargon, count: int | None = None, shared_id: int | None = None) -> EntryView:
    """The read-only view of a row (counted `count` times, if given, rather than its own count)."""
    return EntryView(
        row.id,
        row.chat_id,
        row.content,
        row.meaning,
        row.is_jargon,
        row.count if count is None else count,
        row.last_inference_count,
        row.status,
        row.provenance,
        row.decided_by,
        row.decided_at,
        row.created_at,
        row.updated_at,
        shared_id,
    )


def scope_chat(scope: Scope, chat_id: int) -> int | None:
    """The `chat_id` a term mined in `chat_id` is stored under."""
    return None if scope == "global" else chat_id


def visible_in(scope: Scope, chat_id: int) -> ColumnElement[bool]:
    """The entries a chat may see: global ones, plus its own in chat scope (never another chat's)."""
    if scope == "global":
        return Jargon.chat_id.is_(None)
    return or_(Jargon.chat_id.is_(None), Jargon.chat_id == chat_id)


# The rows that decide what a chat has explained: explainable ones, and rejected ones (a chat's own
# rejected entry hides the global entry of the same term).
_SHAPES_VOCABULARY = or_(
    and_(Jargon.status.in_(EXPLAINABLE), Jargon.meaning != ""), Jargon.status == "rejected"
)


def _hides_global(entry: EntryView, shared: EntryView) -> bool:
    """True when a chat's own `entry` stands for its term in that chat instead of the `shared` global
    entry: a member's meaning only while the shared one has none to explain."""
    if entry.provenance == MEMBER and shared.explainable:
        return False
    return entry.explainable or entry.status == "rejected"


def one_per_term(entries: Iterable[EntryView]) -> list[EntryView]:
    """One entry per term among a chat's own and global entries: the chat's own when it hides the
    global one, else the global one (an undecided own entry without a meaning only when alone)."""
    chosen: dict[str, EntryView] = {}
    for entry in sorted(entries, key=lambda e: e.chat_id is None):
        key = normalize(entry.content)
        own = chosen.get(key)
        if own is None or (entry.chat_id is None and not _hides_global(own, entry)):
            chosen[key] = entry
    return list(chosen.values())


def is_decided(row: Jargon) -> bool:
    """True when an admin decided the entry (inference must leave it alone)."""
    return row.status in ("approved", "rejected") or row.provenance == "manual"


def _check_unicode(what: str, text: str) -> None:
    """Refuse text the database cannot store (a lone surrogate, as an escaped one in JSON gives) or that
    would show as nothing or garble a page or a prompt (a control character such as NUL; a meaning may
    keep its line breaks and tabs)."""
    at = lone_surrogate_at(text)
    if at is not None:
        raise JargonError(f"the {what} is not valid Unicode (a lone surrogate at character {at})")
    for at, char in enumerate(text):
        if clean_text(char) != char:  # the characters a chat message loses (memory.types.clean_text)
            raise JargonError(f"the {what} holds a control character (U+{ord(char):04X} at character {at})")


def clean_term(content: str) -> str:
    """A term fit for storage: trimmed, non-empty, not too long, valid Unicode, without the characters
    that show nothing (`drop_invisible`, as names lose them): "绝\u200b绝子" would look like 绝绝子
    without ever matching it, and a term of a zero-width space alone would show as blank."""
    text = " ".join(content.split())
    _check_unicode("term", text)
    text = " ".join(drop_invisible(text).split())
    if not normalize(text):
        raise JargonError("a term cannot be empty")
    if len(text) > MAX_TERM_CHARS:
        raise JargonError(f"a term is at most {MAX_TERM_CHARS} characters: {truncate(text, 21)}")
    return text


# -- mining ------------------------------------------------------------------------------------


async def _find_in_scope(session: AsyncSession, chat_id: int | None, norm: str) -> Jargon | None:
    scope_test = Jargon.chat_id.is_(None) if chat_id is None else Jargon.chat_id == chat_id
    return (await session.scalars(select(Jargon).where(scope_test, Jargon.normalized == norm))).one_or_none()


async def _new_candidate(session: AsyncSession, chat_id: int | None, content: str, now: float) -> Jargon:
    """A new candidate entry of `content` in `chat_id`'s scope (None: global), counted nowhere yet."""
    row = Jargon(
        chat_id=chat_id,
        content=content,
        normalized=normalize(content),
        meaning="",
        count=0,
        last_inference_count=0,
        status="candidate",
        provenance="mined",
        revision=0,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    return row


async def upsert_mined(
    session: AsyncSession,
    chat_id: int,
    scope: Scope,
    candidates: Sequence[Candidate],
    now: float,
    max_evidence: int = 20,
) -> list[int]:
    """Count each candidate in the dictionary; returns the ids of the entries touched.

    `Candidate.message_keys` are message ids (as strings) of `chat_id`. The count grows by the number
    of evidence messages not counted before; at most `max_evidence` references are kept per chat.
    Rejected entries are still counted (so an admin sees they keep coming) but never explained.
    """
    owner = scope_chat(scope, chat_id)
    touched: list[int] = []
    for cand in candidates:
        norm = normalize(cand.content)
        if not norm or len(cand.content) > MAX_TERM_CHARS:
            continue
        row = await _find_in_scope(session, owner, norm)
        if row is None:
            row = await _new_candidate(session, owner, cand.content, now)
        ids = [int(k) for k in cand.message_keys]
        known = set(
            (
                await session.scalars(
                    select(JargonEvidence.message_id).where(
                        JargonEvidence.jargon_id == row.id, JargonEvidence.message_id.in_(ids)
                    )
                )
            ).all()
        )
        new_ids = [i for i in ids if i not in known]
        if not new_ids:
            continue
        stored = int(
            (
                await session.execute(
                    select(func.count()).where(
                        JargonEvidence.jargon_id == row.id, JargonEvidence.chat_id == chat_id
                    )
                )
            ).scalar_one()
        )
        for message_id in new_ids[: max(0, max_evidence - stored)]:
            session.add(JargonEvidence(jargon_id=row.id, message_id=message_id, chat_id=chat_id))
        per_chat = await session.get(JargonChatCount, (row.id, chat_id))
        if per_chat is None:
            session.add(JargonChatCount(jargon_id=row.id, chat_id=chat_id, count=len(new_ids)))
        else:
            per_chat.count += len(new_ids)
        row.count += len(new_ids)
        row.updated_at = now
        touched.append(row.id)
    await session.flush()
    return touched


async def rejected_terms(session: AsyncSession, chat_id: int) -> list[str]:
    """Terms an admin rejected that mining in `chat_id` must not propose again: the global dictionary's
    and the chat's own, whatever the scope setting. Under `scope = "global"` a term rejected in the
    chat's own dictionary (under the chat scope before, or added for the chat) is not mined from its
    messages into the global one either: the rejection would come back through the shared dictionary
    and be explained, from this chat's examples, in every other chat."""
    query = select(Jargon.content).where(visible_in("chat", chat_id), Jargon.status == "rejected")
    return list((await session.scalars(query)).all())


async def member_meanings(
    session: AsyncSession, chat_id: int, heard: Iterable[MemberMeaning], now: float
) -> int:
    """Store the meanings members of `chat_id` gave (`member_meaning`) of the terms the dictionary
    holds for the chat; returns how many changed an entry."""
    said = {m.term: m for m in heard}
    if not said:
        return 0
    query = select(Jargon.normalized).where(
        visible_in("chat", chat_id), Jargon.normalized.in_(json_values(sorted(said)))
    )
    held = set((await session.scalars(query)).all())
    return sum([await member_meaning(session, chat_id, said[term], now) for term in sorted(held)])


async def unexplained(session: AsyncSession, chat_id: int, terms: Iterable[str]) -> list[str]:
    """Of `terms` (normalised), those a member's meaning may still fill in `chat_id`: no entry of it
    the chat sees has a meaning or was decided by an admin (`member_meaning` leaves those alone)."""
    wanted = sorted(set(terms))
    settled = or_(
        Jargon.meaning != "", Jargon.status.in_(("approved", "rejected")), Jargon.provenance == "manual"
    )
    query = select(Jargon.normalized).where(
        visible_in("chat", chat_id), Jargon.normalized.in_(json_values(wanted)), settled
    )
    known = set((await session.scalars(query)).all())
    return [term for term in wanted if term not in known]


async def member_meaning(session: AsyncSession, chat_id: int, said: MemberMeaning, now: float) -> bool:
    """Store the meaning a member of `chat_id` gave a term (memory.jargon.explanations) in the chat's
    own entry of it, with their message as evidence; returns whether it changed anything.

    Only a term the dictionary holds for the chat: its own entry, or a global candidate (an own entry
    is then made for the meaning, which stays in this chat; mining goes on counting the global one).
    An entry an admin decided, one the model gave a meaning, and a global entry with a meaning (the
    model's or an admin's) are left as they are; a member's meaning gives way to a later one."""
    message_id = int(said.message_key)
    message = await session.get(Message, message_id)
    # Still there as it was heard, and in this chat: not deleted or edited since, never another chat's.
    if message is None or message.chat_id != chat_id or said.meaning.rstrip("…") not in message.text:
        return False
    row = await _find_in_scope(session, chat_id, said.term)
    if row is None:
        shared = await _find_in_scope(session, None, said.term)
        if shared is None or is_decided(shared) or shared.status != "candidate":
            return False
        row = await _new_candidate(session, chat_id, shared.content, now)
    elif is_decided(row) or row.provenance not in ("mined", MEMBER) or row.meaning == said.meaning:
        return False
    old = _snapshot(row)
    row.meaning, row.status, row.provenance = said.meaning, "inferred", MEMBER
    _changed(row, now)
    held = select(JargonEvidence.id).where(
        JargonEvidence.jargon_id == row.id, JargonEvidence.message_id == message_id
    )
    if await session.scalar(held) is None:
        session.add(JargonEvidence(jargon_id=row.id, message_id=message_id, chat_id=chat_id))
    trail = _trail(row, "member", MEMBER_ACTION, old, now)
    trail.new = {**trail.new, "message_id": message_id}
    session.add(trail)
    await session.flush()
    return True


# -- reading -----------------------------------------------------------------------------------


# A chat's own entry of a term the global dictionary also holds (a meaning a member gave, under the
# global scope, or an entry mined under the chat scope before): mining counts the term in the global
# entry, per chat, and the own entry stands beside it. The global one is found through the unique
# index on (coalesce(chat_id, 0), normalized).
_SHARED = aliased(Jargon)
_SHARED_ID = (
    select(_SHARED.id)
    .where(
        Jargon.chat_id.is_not(None),
        func.coalesce(_SHARED.chat_id, 0) == 0,
        _SHARED.normalized == Jargon.normalized,
    )
    .correlate(Jargon)
    .scalar_subquery()
)
_SHARED_HERE = (
    select(JargonChatCount.count)
    .where(JargonChatCount.jargon_id == _SHARED_ID, JargonChatCount.chat_id == Jargon.chat_id)
    .correlate(Jargon)
    .scalar_subquery()
)
# How often the entry's term was counted where it belongs: a global entry's own count (every chat's),
# a chat's own entry's count plus the global entry's count in that chat (a member's meaning, counted
# nowhere itself, shows how often its chat used the term, not ×0).
_SEEN_COUNT = case(
    (Jargon.chat_id.is_(None), Jargon.count), else_=Jargon.count + func.coalesce(_SHARED_HERE, 0)
)


def _as_seen() -> Select[Jargon, int, int | None]:
    """Entries, each with its count as its chat sees it and the global entry beside it."""
    return select(Jargon, _SEEN_COUNT, _SHARED_ID)


async def get(session: AsyncSession, jargon_id: int) -> EntryView | None:
    """One entry by id, counted as its chat sees it (see `EntryView`)."""
    found = await _read_back(session, [jargon_id])
    return found[0] if found else None


async def _read_back(session: AsyncSession, ids: Sequence[int]) -> list[EntryView]:
    """The entries of `ids` that exist, in that order, counted as their chats see them."""
    query = _as_seen().where(Jargon.id.in_(json_values(list(ids))))
    found = {row.id: view(row, count, shared) for row, count, shared in (await session.execute(query)).all()}
    return [found[i] for i in ids if i in found]


async def lookup(session: AsyncSession, term: str, chat_id: int) -> EntryView | None:
    """The entry for `term` visible in `chat_id`: the chat's own when it is explainable or rejected,
    else the global one, else the chat's own undecided one. (Whatever the scope setting, a chat never
    sees another chat's own entries.)"""
    forms = asked_forms(term)
    if not forms:
        return None
    query = select(Jargon).where(visible_in("chat", chat_id), Jargon.normalized.in_(forms))
    rows = (await session.scalars(query)).all()
    found = {normalize(entry.content): entry for entry in one_per_term(view(row) for row in rows)}
    return next((found[form] for form in forms if form in found), None)


def asked_forms(term: str) -> list[str]:
    """The normalised forms a term asked about may be stored under, best first: as typed (spaces
    collapsed), then without the punctuation around it — "yyds？", "「老地方」", "#hikeday"."""
    norm = normalize(" ".join(drop_invisible(term).split()))
    start, end = 0, len(norm)
    while start < end and _is_edge_mark(norm[start]):
        start += 1
    while end > start and _is_edge_mark(norm[end - 1]):
        end -= 1
    return list(dict.fromkeys(form for form in (norm, norm[start:end].strip()) if form))


def _is_edge_mark(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch).startswith("P")


async def list_entries(
    session: AsyncSession,
    chat_id: int | None = None,
    statuses: Iterable[str] = (),
    min_count: int = 0,
    limit: int | None = 100,
    offset: int = 0,
    search: str = "",
) -> list[EntryView]:
    """Entries, most counted first, each counted as its chat sees it (see `EntryView`). `chat_id`:
    entries of that chat's scope or seen in that chat."""
    query = _as_seen()
    if chat_id is not None:
        seen = select(JargonChatCount.jargon_id).where(JargonChatCount.chat_id == chat_id)
        query = query.where(or_(Jargon.chat_id == chat_id, Jargon.id.in_(seen)))
    wanted = list(statuses)
    for status in wanted:
        if status not in STATUSES:
            raise JargonError(f"unknown status {status!r} (one of {', '.join(STATUSES)})")
    if wanted:
        query = query.where(Jargon.status.in_(wanted))
    if min_count:
        query = query.where(_SEEN_COUNT >= min_count)
    if search.strip():
        query = query.where(Jargon.normalized.contains(normalize(search.strip()), autoescape=True))
    query = query.order_by(_SEEN_COUNT.desc(), Jargon.id).offset(offset)
    if limit is not None:
        query = query.limit(limit)
    return [view(row, count, shared) for row, count, shared in (await session.execute(query)).all()]


async def chat_counts(session: AsyncSession, jargon_id: int) -> dict[int, int]:
    """Per-chat counts of an entry; a chat's own entry's count in its chat takes in the global entry's
    count there, as `get` counts it."""
    rows = await session.execute(
        select(JargonChatCount.chat_id, JargonChatCount.count).where(JargonChatCount.jargon_id == jargon_id)
    )
    counts = {chat: count for chat, count in rows.all()}
    owner, shared_here = (
        await session.execute(select(Jargon.chat_id, _SHARED_HERE).where(Jargon.id == jargon_id))
    ).one_or_none() or (None, None)
    if owner is not None and shared_here:
        counts[owner] = counts.get(owner, 0) + shared_here
    return counts


EVIDENCE_AROUND = 2
"""How many messages either side of an evidence message are shown with it (and given to inference)."""


async def evidence(
    session: AsyncSession,
    jargon_id: int,
    chat_id: int | None,
    limit: int = 5,
    around: int = EVIDENCE_AROUND,
    leave_out: Collection[int] = (),
) -> list[Evidence]:
    """Evidence messages of an entry with `around` messages either side, newest first.

    `chat_id` restricts the evidence to one chat: a chat asking about a global term sees only its own
    messages. None (admins) shows every chat's but those of `leave_out`.
    """
    query = select(JargonEvidence.message_id).where(JargonEvidence.jargon_id == jargon_id)
    if chat_id is not None:
        query = query.where(JargonEvidence.chat_id == chat_id)
    if leave_out:
        query = query.where(JargonEvidence.chat_id.not_in(sorted(leave_out)))
    ids = list((await session.scalars(query.order_by(JargonEvidence.message_id.desc()).limit(limit))).all())
    found: list[Evidence] = []
    for message in await messages.by_ids(session, ids):
        before = await messages.recent(session, message.chat_id, around, before_id=message.id)
        after = await messages.after(session, message.chat_id, message.id, around)
        found.append(Evidence(message, [*before, message, *after]))
    return sorted(found, key=lambda e: -e.message.id)


async def explainable(session: AsyncSession, chat_id: int) -> list[EntryView]:
    """Entries the reply path may explain in `chat_id`, one per term: the global ones and the chat's
    own (under either scope setting), the chat's own entry of a term winning over the global one (a
    rejected own entry leaves the term unexplained)."""
    query = select(Jargon).where(visible_in("chat", chat_id), _SHAPES_VOCABULARY)
    rows = (await session.scalars(query)).all()
    return [v for v in one_per_term(view(row) for row in rows) if v.explainable]


async def has_own_vocabulary(session: AsyncSession, chat_id: int) -> bool:
    """True when `chat_id` has own entries that change what it has explained (else it sees exactly
    the global entries)."""
    query = select(Jargon.id).where(Jargon.chat_id == chat_id, _SHAPES_VOCABULARY).limit(1)
    return (await session.scalar(query)) is not None


# Spreads (id, revision) pairs over a 31-bit range, so the fingerprint's sum moves when one entry
# leaves the explainable set and another joins it in the same breath (count and revisions unchanged).
_ROW_HASH = (Jargon.id * 1_000_003 + Jargon.revision * 7_919) % 2_147_483_647


async def version(session: AsyncSession) -> tuple[int, int, int]:
    """A cheap fingerprint of the explainable and rejected entries: it changes whenever one is added,
    edited or removed (by this process or another), also when one is deleted and another approved
    between two reads, and not when mining merely counts."""
    row = (
        await session.execute(
            select(
                func.count(),
                func.coalesce(func.sum(Jargon.revision), 0),
                func.coalesce(func.sum(_ROW_HASH), 0),
            ).where(_SHAPES_VOCABULARY)
        )
    ).one()
    return int(row[0]), int(row[1]), int(row[2])


def _changed(row: Jargon, now: float) -> None:
    row.revision = (row.revision or 0) + 1
    row.updated_at = now


# -- review --------------------------------------------------------------------------------------

_TRAIL_FIELDS = ("content", "meaning", "is_jargon", "status", "provenance")


def _snapshot(row: Jargon) -> dict[str, Any]:
    return {name: getattr(row, name) for name in _TRAIL_FIELDS}


async def _load(session: AsyncSession, jargon_id: int, expected_revision: int | None = None) -> Jargon:
    row = await session.get(Jargon, jargon_id)
    if row is None:
        raise JargonError(f"no jargon entry with id {jargon_id}")
    if expected_revision is not None and (row.revision or 0) != expected_revision:
        raise JargonChanged(f"{_changed_since(row)}; nothing was saved: reload it and decide again")
    return row


def _changed_since(row: Jargon) -> str:
    return (
        f"entry {row.id} ({row.content}) was changed since you opened it "
        f"(now {row.status}, meaning {row.meaning or '—'})"
    )


async def revision(session: AsyncSession, jargon_id: int) -> int:
    """How often an entry's term, meaning or status has changed (0 for a new one); forms pass it back
    as `expected_revision` so a change made meanwhile is not overwritten."""
    return (await _load(session, jargon_id)).revision or 0


async def revisions(session: AsyncSession, ids: Sequence[int]) -> dict[int, int]:
    """Each existing entry's revision (`revision`), for a list's batch form."""
    found = await session.execute(
        select(Jargon.id, Jargon.revision).where(Jargon.id.in_(json_values(list(ids))))
    )
    return {int(jargon_id): int(rev or 0) for jargon_id, rev in found.all()}


def _trail(row: Jargon, actor: str, action: str, old: dict[str, Any], now: float) -> JargonReview:
    return JargonReview(jargon_id=row.id, actor=actor, action=action, old=old, new=_snapshot(row), time=now)


async def decide(
    session: AsyncSession,
    ids: Sequence[int],
    action: Decision,
    actor: str,
    now: float,
    meaning: str | None = None,
    expected_revision: int | None = None,
) -> list[EntryView]:
    """Approve or reject entries (a batch; an id given twice is decided once). Approving may set the
    meaning at the same time. With `expected_revision` (one entry seen at that revision) a change made
    since is refused with JargonChanged."""
    done: list[int] = []
    for jargon_id in dict.fromkeys(ids):
        row = await _load(session, jargon_id, expected_revision)
        old = _snapshot(row)
        row.status = "approved" if action == "approve" else "rejected"
        if meaning is not None:
            row.meaning = _clean_meaning(meaning)
            row.provenance = "manual"
        if action == "approve" and row.is_jargon is None:
            row.is_jargon = True
        row.decided_by, row.decided_at = actor, now
        _changed(row, now)
        session.add(_trail(row, actor, action, old, now))
        done.append(row.id)
    await session.flush()
    return await _read_back(session, done)


@dataclass(frozen=True, slots=True)
class Skipped:
    """An entry of a batch left undecided, and why."""

    jargon_id: int
    why: str


async def decide_seen(
    session: AsyncSession,
    seen: Mapping[int, int | None],
    action: Decision,
    actor: str,
    now: float,
    meaning: str | None = None,
) -> tuple[list[EntryView], list[Skipped]]:
    """Approve or reject entries, each as seen at a revision (a list page's batch): one changed since,
    deleted since, or named without its revision (None) is skipped, with why; the others are decided
    as `decide` decides them. Each entry is decided whole or not at all."""
    decided: list[EntryView] = []
    skipped: list[Skipped] = []
    for jargon_id, seen_revision in seen.items():
        row = await session.get(Jargon, jargon_id)
        if row is None:
            skipped.append(Skipped(jargon_id, f"entry {jargon_id} was deleted since"))
        elif seen_revision is None:
            why = f"entry {jargon_id} ({row.content}) was sent without the revision it was seen at"
            skipped.append(Skipped(jargon_id, why))
        elif (row.revision or 0) != seen_revision:
            skipped.append(Skipped(jargon_id, _changed_since(row)))
        else:
            decided += await decide(session, [jargon_id], action, actor, now, meaning, seen_revision)
    return decided, skipped


def _clean_meaning(meaning: str) -> str:
    text = meaning.strip()
    _check_unicode("meaning", text)
    if len(text) > MAX_MEANING_CHARS:
        raise JargonError(f"a meaning is at most {MAX_MEANING_CHARS} characters")
    return text


async def edit(
    session: AsyncSession,
    jargon_id: int,
    actor: str,
    now: float,
    meaning: str | None = None,
    content: str | None = None,
    is_jargon: bool | None = None,
    expected_revision: int | None = None,
) -> EntryView:
    """Change an entry by hand; the meaning becomes manual (inference never overwrites it). With
    `expected_revision` a change made since that revision is refused with JargonChanged."""
    row = await _load(session, jargon_id, expected_revision)
    old = _snapshot(row)
    if content is not None:
        text = clean_term(content)
        other = await _find_in_scope(session, row.chat_id, normalize(text))
        if other is not None and other.id != row.id:
            raise JargonError(f"{text!r} is already entry {other.id} in this scope")
        row.content, row.normalized = text, normalize(text)
    if meaning is not None:
        row.meaning = _clean_meaning(meaning)
    if is_jargon is not None:
        row.is_jargon = is_jargon
    row.provenance = "manual"
    row.decided_by, row.decided_at = actor, now
    _changed(row, now)
    session.add(_trail(row, actor, "edit", old, now))
    await session.flush()
    return (await _read_back(session, [row.id]))[0]


async def remove(
    session: AsyncSession, ids: Sequence[int], actor: str, now: float, expected_revision: int | None = None
) -> int:
    """Delete entries (their counts and evidence go with them; the trail stays). An id given twice is
    deleted once. With `expected_revision` (one entry seen at that revision) a change made since is
    refused with JargonChanged: a decision taken meanwhile is not deleted unseen."""
    removed = 0
    for jargon_id in dict.fromkeys(ids):
        row = await _load(session, jargon_id, expected_revision)
        session.add(
            JargonReview(jargon_id=row.id, actor=actor, action="delete", old=_snapshot(row), new={}, time=now)
        )
        await session.execute(delete(JargonEvidence).where(JargonEvidence.jargon_id == row.id))
        await session.execute(delete(JargonChatCount).where(JargonChatCount.jargon_id == row.id))
        await session.delete(row)
        removed += 1
    await session.flush()
    return removed


@dataclass(frozen=True, slots=True)
class ChatFold:
    """What `fold_chat` did: own entries moved as they were, and entries folded into the other
    chat's entry of the same term."""

    moved: int
    folded: int


def _rank(row: Jargon) -> tuple[bool, bool]:
    """Which of two entries of one term keeps its meaning and status when they fold: an admin's
    decision first, then one the reply path may explain."""
    return is_decided(row), view(row).explainable


async def fold_chat(
    session: AsyncSession, from_chat: int, into_chat: int, actor: str, now: float
) -> ChatFold:
    """Make `from_chat`'s part of the dictionary `into_chat`'s (a chat merged into another). Its own
    entries move to `into_chat`'s dictionary; where both chats have an entry of the same term, the two
    fold into one: counts and evidence add up, and the meaning and status of the entry an admin decided
    (else of the one that is explainable, else `into_chat`'s) are kept; the fold leaves a review row.
    Per-chat counts and evidence of every entry, global ones included, move to `into_chat`."""
    moved = folded = 0
    own = (await session.scalars(select(Jargon).where(Jargon.chat_id == from_chat).order_by(Jargon.id))).all()
    for row in list(own):
        other = await _find_in_scope(session, into_chat, row.normalized)
        if other is None:
            row.chat_id = into_chat
            _changed(row, now)  # the chat's vocabulary changed: cached matchers must notice
            moved += 1
            continue
        keeper, absorbed = (row, other) if _rank(row) > _rank(other) else (other, row)
        old = {**_snapshot(keeper), "merged_entry": absorbed.id, "merged_count": absorbed.count}
        await _fold_entry(session, keeper, absorbed)
        keeper.chat_id = into_chat
        _changed(keeper, now)
        session.add(_trail(keeper, actor, "merge", old, now))
        folded += 1
    counts = (
        await session.scalars(select(JargonChatCount).where(JargonChatCount.chat_id == from_chat))
    ).all()
    for count in list(counts):
        await _rehome_count(session, count, count.jargon_id, into_chat)
    await session.execute(
        update(JargonEvidence).where(JargonEvidence.chat_id == from_chat).values(chat_id=into_chat)
    )
    await session.flush()
    return ChatFold(moved, folded)


async def _fold_entry(session: AsyncSession, keeper: Jargon, absorbed: Jargon) -> None:
    """Add `absorbed`'s counts and evidence to `keeper` and delete it (its review trail stays)."""
    keeper.count += absorbed.count
    keeper.created_at = min(keeper.created_at, absorbed.created_at)
    counts = (
        await session.scalars(select(JargonChatCount).where(JargonChatCount.jargon_id == absorbed.id))
    ).all()
    for count in list(counts):
        await _rehome_count(session, count, keeper.id, count.chat_id)
    held = set(
        (
            await session.scalars(
                select(JargonEvidence.message_id).where(JargonEvidence.jargon_id == keeper.id)
            )
        ).all()
    )
    evidence = (
        await session.scalars(select(JargonEvidence).where(JargonEvidence.jargon_id == absorbed.id))
    ).all()
    for item in list(evidence):
        if item.message_id in held:
            await session.delete(item)
        else:
            item.jargon_id = keeper.id
    await session.delete(absorbed)
    await session.flush()


async def _rehome_count(session: AsyncSession, count: JargonChatCount, jargon_id: int, chat_id: int) -> None:
    """Make `count` the count of `jargon_id` in `chat_id`, adding it to the one there if any."""
    if (count.jargon_id, count.chat_id) == (jargon_id, chat_id):
        return
    kept = await session.get(JargonChatCount, (jargon_id, chat_id))
    if kept is None:
        session.add(JargonChatCount(jargon_id=jargon_id, chat_id=chat_id, count=count.count))
    else:
        kept.count += count.count
    await session.delete(count)
    await session.flush()


async def add_manual(
    session: AsyncSession,
    content: str,
    meaning: str,
    chat_id: int | None,
    actor: str,
    now: float,
    status: str = "approved",
    is_jargon: bool | None = True,
) -> tuple[EntryView, bool]:
    """Add or overwrite an entry by hand (import, web console). Returns (entry, created)."""
    if status not in STATUSES:
        raise JargonError(f"unknown status {status!r}")
    text = clean_term(content)
    row = await _find_in_scope(session, chat_id, normalize(text))
    created = row is None
    old: dict[str, Any] = {}
    if row is None:
        row = Jargon(
            chat_id=chat_id,
            content=text,
            normalized=normalize(text),
            count=0,
            last_inference_count=0,
            revision=0,
            created_at=now,
        )
        session.add(row)
    else:
        old = _snapshot(row)
    row.meaning = _clean_meaning(meaning)
    row.status, row.is_jargon, row.provenance = status, is_jargon, "manual"
    row.decided_by, row.decided_at = actor, now
    _changed(row, now)
    await session.flush()
    session.add(_trail(row, actor, "import" if created else "overwrite", old, now))
    return view(row), created


async def reviews(session: AsyncSession, jargon_id: int) -> list[dict[str, Any]]:
    """The review trail of an entry, oldest first."""
    rows = await session.scalars(
        select(JargonReview).where(JargonReview.jargon_id == jargon_id).order_by(JargonReview.id)
    )
    return [
        {"actor": r.actor, "action": r.action, "old": r.old, "new": r.new, "time": r.time} for r in rows.all()
    ]


# -- inference bookkeeping ------------------------------------------------------------------------


async def drop_meanings_read_from(session: AsyncSession, message_ids: Sequence[int], now: float) -> int:
    """Before these messages are deleted: drop the model-inferred meanings that may repeat what they
    said, i.e. those of unreviewed entries with one of them, or a message within `EVIDENCE_AROUND` of
    one, as evidence (inference reads each evidence message with that context), and the meanings
    members gave in one of them (`member_meaning`; the mining job gives the entry a later
    explanation still standing when it mines the term again). Such an entry is a candidate again and
    is inferred afresh from what is left at its next threshold check; an admin's decision or meaning
    stays. Returns how many meanings were dropped. The ids go to SQLite as one JSON value, so any
    number of them (a forgotten person's every message) costs a few statements."""
    ids = sorted(set(message_ids))
    inferred = (
        select(JargonEvidence.jargon_id)
        .join(Jargon, Jargon.id == JargonEvidence.jargon_id)
        .where(Jargon.status == "inferred", Jargon.provenance == "inferred")
    )
    chats = select(Message.chat_id).where(Message.id.in_(json_values(ids))).distinct()
    given = select(JargonReview.jargon_id).where(
        JargonReview.action == MEMBER_ACTION,
        func.json_extract(JargonReview.new, "$.message_id").in_(json_values(ids)),
    )
    said_in = and_(Jargon.provenance == MEMBER, Jargon.id.in_(given))
    touched = or_(
        exists(inferred.where(JargonEvidence.chat_id.in_(chats))), exists(select(Jargon.id).where(said_in))
    )
    if not await session.scalar(select(touched)):
        return 0
    seen = {
        value
        for row in await session.execute(_AROUND, {"ids": json.dumps(ids)})
        for value in row
        if value is not None
    }
    read_from = inferred.where(JargonEvidence.message_id.in_(json_values(sorted(seen))))
    rows = (await session.scalars(select(Jargon).where(or_(Jargon.id.in_(read_from), said_in)))).all()
    for row in rows:
        old = _snapshot(row)
        row.meaning, row.is_jargon, row.status, row.provenance = "", None, "candidate", "mined"
        row.last_inference_count = 0
        _changed(row, now)
        session.add(_trail(row, "message deletion", "meaning dropped", old, now))
    return len(rows)


_NEAR = ", ".join(f"LAG(id, {n}) OVER w, LEAD(id, {n}) OVER w" for n in range(1, EVIDENCE_AROUND + 1))
# Each message of `:ids` (a JSON array) with the `EVIDENCE_AROUND` messages either side of it in its
# chat, as `messages.recent` and `messages.after` would give them: one pass over the chats concerned.
_AROUND = text(
    f"SELECT * FROM (SELECT id, {_NEAR} FROM messages WHERE chat_id IN "
    "(SELECT DISTINCT chat_id FROM messages WHERE id IN (SELECT value FROM json_each(:ids))) "
    "WINDOW w AS (PARTITION BY chat_id ORDER BY id)) WHERE id IN (SELECT value FROM json_each(:ids))"
)


def due_threshold(count: int, last_inference_count: int, thresholds: Sequence[int]) -> int | None:
    """The highest threshold crossed since the last inference, or None (each fires at most once;
    thresholds jumped over together fire once, as the highest)."""
    crossed = [t for t in thresholds if last_inference_count < t <= count]
    return max(crossed) if crossed else None


async def due_for_inference(
    session: AsyncSession, thresholds: Sequence[int], ids: Iterable[int] | None = None, limit: int = 20
) -> list[tuple[EntryView, int]]:
    """Undecided entries (among `ids`, or all) that crossed a threshold, most counted first, at most
    `limit` of them (none for a limit of 0)."""
    if not thresholds or limit <= 0:
        return []
    query = select(Jargon).where(*_due_for_inference(thresholds))
    if ids is not None:
        query = query.where(Jargon.id.in_(sorted(set(ids))))
    due: list[tuple[EntryView, int]] = []
    for row in (await session.scalars(query.order_by(Jargon.count.desc(), Jargon.id))).all():
        threshold = due_threshold(row.count, row.last_inference_count, thresholds)
        if threshold is not None and not is_decided(row):
            due.append((view(row), threshold))
            if len(due) >= limit:
                break
    return due


async def count_due_for_inference(session: AsyncSession, thresholds: Sequence[int]) -> int:
    """How many entries `due_for_inference` would give without a limit: undecided, with a threshold
    crossed since their last inference."""
    if not thresholds:
        return 0
    query = select(func.count()).where(*_due_for_inference(thresholds))
    return int((await session.execute(query)).scalar_one())


def _due_for_inference(thresholds: Sequence[int]) -> tuple[ColumnElement[bool], ...]:
    """Entries inference may take that crossed one of `thresholds` (not empty) since their last
    inference (`due_threshold` tells which). The crossing is in the query, so that the entries counted
    on since their last threshold but short of the next one (most of a dictionary grown over months)
    are not read at every tick of the mining job; the plain bounds before it narrow the scan."""
    crossed = (and_(Jargon.last_inference_count < t, Jargon.count >= t) for t in sorted(set(thresholds)))
    return (
        Jargon.count > Jargon.last_inference_count,
        Jargon.count >= min(thresholds),
        Jargon.last_inference_count < max(thresholds),
        Jargon.status.in_(("candidate", "inferred")),
        Jargon.provenance != "manual",
        or_(*crossed),
    )


async def revision_if_due(session: AsyncSession, entry: EntryView) -> int | None:
    """The revision of `entry` (as `due_for_inference` gave it) while inference may still take it: not
    deleted, decided by an admin or inferred by another run since; else None, and the model need not
    be asked (`apply_inference` would store nothing)."""
    row = await session.get(Jargon, entry.id)
    if row is None or is_decided(row) or row.last_inference_count != entry.last_inference_count:
        return None
    return row.revision or 0


async def apply_inference(
    session: AsyncSession,
    jargon_id: int,
    threshold: int,
    expected_last: int,
    meaning: str | None,
    is_jargon: bool | None,
    now: float,
    expected_revision: int | None = None,
) -> bool:
    """Store an inference result unless the entry changed meanwhile (decided, deleted, inferred by
    another run, or, with `expected_revision` read with the evidence, changed at all since: edited,
    folded with another entry by a chat merge, its meaning dropped by a deletion); it then stays due.
    `meaning` None = the evidence gave no information: only the threshold is used up."""
    row = await session.get(Jargon, jargon_id)
    if row is None or is_decided(row) or row.last_inference_count != expected_last:
        return False
    if expected_revision is not None and (row.revision or 0) != expected_revision:
        log.info("jargon inference for %r: the entry changed meanwhile; left for a later run", row.content)
        return False
    row.last_inference_count = threshold
    if meaning is not None:
        row.meaning = truncate(meaning, MAX_MEANING_CHARS)
        row.is_jargon = is_jargon
        row.status = "inferred"
        row.provenance = "inferred"
    _changed(row, now)
    await session.flush()
    return True
