"""Merging one chat's memory into another's: a Telegram group upgraded to a supergroup (a new chat
id), or an admin's `qunyi chats merge FROM INTO`.

Everything the database holds of the merged chat (FROM) becomes the other's (INTO) in one write
transaction, all or nothing; `HANDLED` says what happens to each table with a chat column. Message rows
keep their ids (the full-text, turn-window and vector indexes are keyed by them), but their platform
ids move into a namespace of their own (`<FROM's platform id>/<id>`): Telegram numbers a supergroup's
messages from 1 again, so FROM's ids would otherwise clash with INTO's, now or with its next messages
(which would then be refused as id clashes). Reply links inside FROM's messages are renamed alike.
Where a key would clash, rows fold as the owning module folds them elsewhere (people as in a person
merge, jargon as `dictionary.fold_chat`). The job cursors of the two chats are combined so the jobs
that read `id > cursor` read every message once (see `_combined_cursor`). FROM's row is then deleted;
its id is retired (memory.message_ids), so no later chat inherits what is keyed by it. Its platform key
is left as a redirect to INTO with the prefix (`ChatRedirect`, read by memory.ingest.chat_target): an
import of FROM's export, a late message or a deletion under that key lands in INTO under the same
prefixed ids, so what the merge moved is recognised and stays deleted, and FROM is never made again.
Its notes folder moves into INTO's after the commit (files are not part of the transaction); a merge
whose process was killed before that has its notes moved by the next process opening the data directory
(`finish_notes_moves`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Column, delete, func, select, text, update
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.ext.asyncio import AsyncSession

from memory.embeddings.store import drop_vectors
from memory.ingest import chat_target
from memory.jargon import dictionary
from memory.message_ids import retire_chat_ids
from memory.models import (
    Base,
    Chat,
    ChatHistory,
    ChatMember,
    ChatRedirect,
    DeletedMessage,
    EmbeddingVector,
    ForgetLogEntry,
    JargonEvidence,
    JobState,
    Message,
    PersonAlias,
    PersonChatName,
    PersonFact,
    PersonLlmGap,
    PersonTimelineEntry,
    PreferenceDoc,
    TopicCacheEntry,
)
from memory.notes import NoteScopes
from memory.persons import store
from memory.persons.addressed import JOB as ADDRESS_JOB
from memory.persons.addressed import folded_sightings
from memory.persons.admin import fold_alias, fold_facts, fold_membership
from memory.persons.fact_edits import EDITS_JOB, folded_edits
from memory.storage import Database
from memory.storage.fts import searchable
from memory.storage.sql import rows_changed
from memory.topics.check import JOB as TOPIC_CHECK
from memory.topics.disentangle import rekey_state
from memory.turn_windows import rebuild_windows

log = logging.getLogger(__name__)

ACTOR = "chat merge"

# What a merge does with the rows of FROM in every table that has a chat column. A table added later
# with such a column must be added here (tests/memory/test_chat_merge.py checks it against the models).
HANDLED: dict[str, str] = {
    "messages": "moved; platform ids and reply links prefixed with FROM's platform id",
    "deleted_messages": "moved; platform ids prefixed like the messages (they stay deleted)",
    "chat_members": "folded per person (message counts added, first/last seen widened; gone from INTO "
    "when the later leave came after the last message in either)",
    "chat_history": "moved",
    "topic_cache": "moved; thread ids prefixed like the messages",
    "forget_log": "moved",
    "preference_docs": "moved",
    "embeddings": "moved; vectors of messages whose turn window changed dropped (embedded again)",
    "person_aliases": "folded per person and alias (counts added)",
    "person_chat_names": "moved, unless the person or the name already has one in INTO",
    "person_facts": "folded per person as one person's facts, then moved",
    "person_timeline": "moved",
    "person_llm_gaps": "moved (the model reads them in INTO)",
    "person_alias_versions": "bumped for both chats (FROM's counter kept: it only grows)",
    "jargon": "own entries moved, or folded into INTO's entry of the same term",
    "jargon_chat_counts": "folded into INTO's count of the entry",
    "jargon_evidence": "moved",
    "job_state": "cursors combined per job; the topic check's thread state kept or renamed; both chats' "
    "fact edits and names called by kept",
    "chat_redirects": "FROM's key and database id added, pointing at INTO; keys merged into FROM before "
    "re-pointed alike",
}
# Jobs whose data of both chats is kept, folded (person ids are global: they need no renaming).
_FOLDED = {EDITS_JOB: folded_edits, ADDRESS_JOB: folded_sightings}
# Tables whose rows of FROM may stay after the merge (everything else must be empty of FROM).
KEPT = frozenset({"person_alias_versions"})


class ChatMergeError(ValueError):
    """A merge that cannot be made; the message says why and nothing was changed."""


@dataclass(frozen=True, slots=True)
class CursorMerge:
    """A job's cursor after the merge, and how many waiting messages it passes over (0 unless the two
    chats' cursors could not be combined exactly)."""

    job: str
    cursor: int
    passed_over: int


@dataclass(slots=True)
class MergeReport:
    """What a merge moved (or, for a dry run, would move)."""

    source: str
    target: str
    prefix: str
    dry_run: bool = False
    messages: int = 0
    replies: int = 0
    histories: int = 0
    cached_topics: int = 0
    members: int = 0
    aliases: int = 0
    names: int = 0
    names_dropped: int = 0
    facts: int = 0
    timeline: int = 0
    jargon_moved: int = 0
    jargon_folded: int = 0
    evidence: int = 0
    vectors: int = 0
    preferences: int = 0
    forget_log: int = 0
    windows: int = 0
    cursors: list[CursorMerge] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    chat_ids: tuple[int, int] = (0, 0)  # the database ids of FROM and INTO

    def summary(self) -> str:
        """One line: what moved (or would move)."""
        verb = "would merge" if self.dry_run else "merged"
        renamed = sum(1 for old, new in self.notes if old != new)
        passed = sum(c.passed_over for c in self.cursors)
        parts = [
            f"{self.messages} messages (ids now {self.prefix}…)",
            f"{self.histories} topics",
            f"{self.cached_topics} cached topics",
            f"{self.members} members",
            f"{self.aliases} aliases",
            f"{self.names} names" + (f" ({self.names_dropped} taken, dropped)" if self.names_dropped else ""),
            f"{self.facts} facts",
            f"{self.timeline} timeline events",
            f"{self.jargon_moved} jargon terms moved, {self.jargon_folded} folded",
            f"{self.vectors} vectors",
            f"{len(self.notes)} notes" + (f" ({renamed} renamed)" if renamed else ""),
        ]
        line = f"{verb} {self.source} into {self.target}: " + ", ".join(parts)
        if passed:
            line += f"; {passed} waiting messages passed over by the jobs"
        return line


class _DryRun(Exception):
    """Rolls a dry run's transaction back."""


def chat_columns(metadata: Any = Base.metadata) -> list[Column[Any]]:
    """Every column of the mapped tables that holds a chat id: named `chat_id`, or a foreign key to
    `chats.id` (the `chats` table itself aside)."""
    found = []
    for table in metadata.sorted_tables:
        if table.name == Chat.__tablename__:
            continue
        for column in table.columns:
            if column.name == "chat_id" or any(
                fk.target_fullname == "chats.id" for fk in column.foreign_keys
            ):
                found.append(column)
    return found


async def merge_chats(
    db: Database,
    source_id: int,
    target_id: int,
    *,
    now: float,
    notes: NoteScopes | None = None,
    dry_run: bool = False,
) -> MergeReport:
    """Merge chat `source_id` (FROM) into chat `target_id` (INTO) and delete FROM (see the module
    docstring); with `dry_run` nothing changes and the report says what would. Raises ChatMergeError
    when either chat is missing or they are the same."""
    if source_id == target_id:
        raise ChatMergeError("a chat cannot be merged into itself")
    report: MergeReport | None = None
    try:
        async with db.write() as session:
            report = await _merge(session, source_id, target_id, now)
            report.dry_run = dry_run
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    assert report is not None
    if notes is not None:
        report.notes = await notes.merge_chat(report.source, report.target, dry_run=dry_run)
    return report


async def finish_notes_moves(db: Database, notes: NoteScopes) -> list[tuple[str, str]]:
    """Move the notes a merged chat still holds into the chat it went into: its merge was committed,
    and its process killed before the notes moved (they would stay where no key leads any more, and
    the merge, made, cannot be run again). Returns (FROM, INTO) keys of the chats whose notes moved."""
    async with db.read() as session:
        rows = await session.execute(
            select(ChatRedirect.platform, ChatRedirect.platform_chat_id, Chat.platform, Chat.platform_chat_id)
            .join(Chat, Chat.id == ChatRedirect.chat_id)
            .order_by(ChatRedirect.time)
        )
        keys = [(f"{a}:{b}", f"{c}:{d}") for a, b, c, d in rows.all()]
    finished = [(source, target) for source, target in keys if notes.unmoved(source)]
    for source, target in finished:
        moved = await notes.merge_chat(source, target)
        log.warning("notes of %s, merged into %s, moved there now (%d notes)", source, target, len(moved))
    return finished


async def follow_move(
    db: Database,
    platform: str,
    old_chat: str,
    new_chat: str,
    *,
    now: float,
    notes: NoteScopes | None = None,
) -> MergeReport | None:
    """A platform moved a chat to a new id (a Telegram group upgraded to a supergroup): merge what is
    remembered under the old id into the new one, making the new chat if it has no message yet.
    None when there is nothing under the old id (already merged, or never seen): the platform tells
    both chats, so the second notice finds nothing to do. An old id never seen still leads to the new
    chat from then on (a redirect, as a merge leaves), so an import of the old group's export lands
    there."""
    async with db.write() as session:
        source = await _chat_by_key(session, platform, old_chat)
        target = await _chat_by_key(session, platform, new_chat)
        if source is None:
            await _redirect_unseen(session, platform, old_chat, new_chat, now)
        elif target is None:
            made = await chat_target(session, platform, new_chat, source.kind, source.name, now)
            target_id = made.chat_id
        else:
            target_id = target.id
    if source is None:
        log.info(
            "%s:%s moved to %s:%s, but nothing is remembered under the old id (merged already?)",
            platform,
            old_chat,
            platform,
            new_chat,
        )
        return None
    return await merge_chats(db, source.id, target_id, now=now, notes=notes)


async def _chat_by_key(session: AsyncSession, platform: str, platform_chat_id: str) -> Chat | None:
    query = select(Chat).where(Chat.platform == platform, Chat.platform_chat_id == platform_chat_id)
    return (await session.scalars(query)).one_or_none()


async def _merge(session: AsyncSession, source_id: int, target_id: int, now: float) -> MergeReport:
    source = await session.get(Chat, source_id)
    target = await session.get(Chat, target_id)
    if source is None or target is None:
        raise ChatMergeError(f"no chat with id {source_id if source is None else target_id}")
    prefix = await _free_prefix(session, source.platform_chat_id, target_id)
    report = MergeReport(
        f"{source.platform}:{source.platform_chat_id}", f"{target.platform}:{target.platform_chat_id}", prefix
    )
    report.chat_ids = (source_id, target_id)
    changed_windows = await _windows_changing(session, source_id, target_id)
    report.cursors = await _merge_cursors(session, source_id, target_id, prefix)
    await _move_messages(session, source_id, target_id, prefix, report)
    await rebuild_windows(session, changed_windows)
    await drop_vectors(session, "message", changed_windows)
    report.windows = len(changed_windows)
    report.histories = await _move(session, ChatHistory, source_id, target_id)
    report.forget_log = await _move(session, ForgetLogEntry, source_id, target_id)
    report.preferences = await _move(session, PreferenceDoc, source_id, target_id)
    report.vectors = await _move(session, EmbeddingVector, source_id, target_id)
    report.timeline = await _move(session, PersonTimelineEntry, source_id, target_id)
    await _move(session, PersonLlmGap, source_id, target_id)
    report.cached_topics = await _move_topic_cache(session, source_id, target_id, prefix)
    await _merge_people(session, source_id, target_id, report)
    evidence = await session.execute(
        select(func.count()).select_from(JargonEvidence).where(JargonEvidence.chat_id == source_id)
    )
    report.evidence = int(evidence.scalar_one())
    folded = await dictionary.fold_chat(session, source_id, target_id, ACTOR, now)
    report.jargon_moved, report.jargon_folded = folded.moved, folded.folded
    await store.bump_version(session, source_id)
    await store.bump_version(session, target_id)
    target.name = target.name or source.name
    target.created_at = min(target.created_at, source.created_at)
    await _redirect(session, source, target_id, prefix, now)
    await session.flush()
    await _check_nothing_left(session, source_id)
    await retire_chat_ids(session)
    await session.delete(source)
    await session.flush()
    return report


async def _redirect(session: AsyncSession, source: Chat, target_id: int, prefix: str, now: float) -> None:
    """FROM's key now names INTO, its messages' ids there starting with `prefix`; so do the keys of the
    chats merged into FROM before, whose ids got FROM's prefix in front of theirs."""
    await session.execute(
        update(ChatRedirect)
        .where(ChatRedirect.chat_id == source.id)
        .values(chat_id=target_id, prefix=prefix + ChatRedirect.prefix)
        .execution_options(synchronize_session=False)
    )
    await _add_redirect(session, source.platform, source.platform_chat_id, target_id, prefix, now, source.id)


async def _redirect_unseen(
    session: AsyncSession, platform: str, old_chat: str, new_chat: str, now: float
) -> None:
    """A chat never recorded moved to `new_chat` (made if new): its key leads there, unless it
    already leads somewhere (the platform's second notice of the move)."""
    if await session.get(ChatRedirect, (platform, old_chat)) is not None:
        return
    target = await chat_target(session, platform, new_chat, "group", "", now)
    prefix = await _free_prefix(session, old_chat, target.chat_id)
    await _add_redirect(session, platform, old_chat, target.chat_id, prefix, now)


async def _add_redirect(
    session: AsyncSession,
    platform: str,
    platform_chat_id: str,
    target_id: int,
    prefix: str,
    now: float,
    from_chat_id: int | None = None,
) -> None:
    values = {"chat_id": target_id, "prefix": prefix, "time": now, "from_chat_id": from_chat_id}
    stmt = insert(ChatRedirect).values(platform=platform, platform_chat_id=platform_chat_id, **values)
    await session.execute(
        stmt.on_conflict_do_update(
            index_elements=[ChatRedirect.platform, ChatRedirect.platform_chat_id], set_=values
        )
    )


async def _free_prefix(session: AsyncSession, platform_chat_id: str, target_id: int) -> str:
    """`<platform_chat_id>/`, or `<platform_chat_id>#N/`, that no platform id of INTO starts with, so
    no renamed id can clash with one of INTO's (its own ids are the platform's, without the prefix)."""
    for number in range(10_000):
        prefix = f"{platform_chat_id}/" if number == 0 else f"{platform_chat_id}#{number}/"
        taken = await session.execute(
            select(Message.id)
            .where(
                Message.chat_id == target_id,
                func.substr(Message.platform_message_id, 1, len(prefix)) == prefix,
            )
            .limit(1)
        )
        if taken.first() is None:
            return prefix
    raise ChatMergeError(f"no free message id prefix for {platform_chat_id}")


_CHANGING_WINDOWS = text(
    "SELECT id FROM (SELECT m.id AS id, m.chat_id AS chat, LAG(m.chat_id) OVER w AS before, "
    "LEAD(m.chat_id) OVER w AS after FROM messages m "
    f"WHERE m.chat_id IN (:source, :target) AND {searchable('m')} "
    "WINDOW w AS (ORDER BY m.time, m.id)) WHERE before != chat OR after != chat ORDER BY id"
)


async def _windows_changing(session: AsyncSession, source_id: int, target_id: int) -> list[int]:
    """The messages whose previous or next turn will be the other chat's once the two are one: only
    their turn windows (memory.turn_windows) change."""
    rows = await session.execute(_CHANGING_WINDOWS, {"source": source_id, "target": target_id})
    return [int(r[0]) for r in rows]


async def _move_messages(
    session: AsyncSession, source_id: int, target_id: int, prefix: str, report: MergeReport
) -> None:
    replies = await session.execute(
        select(func.count()).where(Message.chat_id == source_id, Message.reply_to.is_not(None))
    )
    report.replies = int(replies.scalar_one())
    await session.execute(
        update(DeletedMessage)
        .where(DeletedMessage.chat_id == source_id)
        .values(chat_id=target_id, platform_message_id=prefix + DeletedMessage.platform_message_id)
        .execution_options(synchronize_session=False)
    )
    result = await session.execute(
        update(Message)
        .where(Message.chat_id == source_id)
        .values(
            chat_id=target_id,
            platform_message_id=prefix + Message.platform_message_id,
            reply_to=prefix + Message.reply_to,  # NULL stays NULL
        )
        .execution_options(synchronize_session=False)
    )
    report.messages = rows_changed(result)


async def _move(session: AsyncSession, model: type[Base], source_id: int, target_id: int) -> int:
    """Re-point a table's rows of FROM at INTO; how many."""
    column = model.__table__.c.chat_id
    result = await session.execute(
        update(model)
        .where(column == source_id)
        .values({column: target_id})
        .execution_options(synchronize_session=False)
    )
    return rows_changed(result)


async def _move_topic_cache(session: AsyncSession, source_id: int, target_id: int, prefix: str) -> int:
    """FROM's topics still collecting messages; their thread ids are message keys, renamed alike."""
    entries = (
        await session.scalars(select(TopicCacheEntry).where(TopicCacheEntry.chat_id == source_id))
    ).all()
    for entry in entries:
        entry.chat_id = target_id
        entry.thread_keys = [prefix + key for key in entry.thread_keys]
    return len(entries)


async def _merge_people(session: AsyncSession, source_id: int, target_id: int, report: MergeReport) -> None:
    """Memberships, aliases, per-chat names and facts of FROM, folded where INTO has the same."""
    members = (await session.scalars(select(ChatMember).where(ChatMember.chat_id == source_id))).all()
    for member in list(members):
        await fold_membership(session, member, target_id, member.person_id)
    report.members = len(members)
    aliases = (await session.scalars(select(PersonAlias).where(PersonAlias.chat_id == source_id))).all()
    for alias in list(aliases):
        await fold_alias(session, alias, alias.person_id, target_id)
    report.aliases = len(aliases)
    await session.flush()
    await _merge_names(session, source_id, target_id, report)
    await _merge_facts(session, source_id, target_id, report)


async def _merge_names(session: AsyncSession, source_id: int, target_id: int, report: MergeReport) -> None:
    """A person's name in FROM becomes their name in INTO, unless they have one there already or
    another member of INTO goes by it (names are unique within a chat); naming then picks again."""
    names = await session.execute(
        select(PersonChatName.person_id, PersonChatName.name_key).where(PersonChatName.chat_id == source_id)
    )
    held = await session.execute(
        select(PersonChatName.person_id, PersonChatName.name_key).where(PersonChatName.chat_id == target_id)
    )
    people, keys = set(), set()
    for person_id, key in held:
        people.add(person_id)
        keys.add(key)
    for person_id, key in names.all():
        if person_id in people or key in keys:
            report.names_dropped += 1
            continue
        people.add(person_id)
        keys.add(key)
        await session.execute(
            update(PersonChatName)
            .where(PersonChatName.chat_id == source_id, PersonChatName.person_id == person_id)
            .values(chat_id=target_id)
            .execution_options(synchronize_session=False)
        )
        report.names += 1
    await session.execute(
        delete(PersonChatName)
        .where(PersonChatName.chat_id == source_id)
        .execution_options(synchronize_session=False)
    )


async def _merge_facts(session: AsyncSession, source_id: int, target_id: int, report: MergeReport) -> None:
    """Each person's current facts of FROM and INTO fold as one person's (`fold_facts`); then FROM's
    facts, superseded ones too, are INTO's."""
    people = (
        await session.scalars(
            select(PersonFact.person_id)
            .where(PersonFact.chat_id == source_id, PersonFact.superseded_at.is_(None))
            .distinct()
        )
    ).all()
    for person_id in people:
        rows = (
            await session.scalars(
                select(PersonFact)
                .where(
                    PersonFact.person_id == person_id,
                    PersonFact.chat_id.in_([source_id, target_id]),
                    PersonFact.superseded_at.is_(None),
                )
                .order_by(PersonFact.time, PersonFact.id)
            )
        ).all()
        await fold_facts(session, rows, lambda row: row.chat_id == target_id)
    await session.flush()
    report.facts = await _move(session, PersonFact, source_id, target_id)


async def _merge_cursors(
    session: AsyncSession, source_id: int, target_id: int, prefix: str
) -> list[CursorMerge]:
    """One job_state row per job for INTO (`_combined_cursor`); FROM's rows are deleted. The topic
    check's thread state is INTO's when it has one, else FROM's with its message keys renamed; an admin's
    fact edits and the names members were called by are both chats' (`_FOLDED`)."""
    rows = await session.execute(
        select(JobState.job, JobState.chat_id, JobState.cursor, JobState.last_run, JobState.data)
        .where(JobState.chat_id.in_([source_id, target_id]))
        .order_by(JobState.job)
    )
    by_job: dict[str, dict[int, Any]] = {}
    for row in rows:
        by_job.setdefault(row.job, {})[row.chat_id] = row
    merged = []
    for job, states in by_job.items():
        theirs, ours = states.get(source_id), states.get(target_id)
        cursor, passed = await _combined_cursor(
            session, (source_id, theirs.cursor if theirs else 0), (target_id, ours.cursor if ours else 0)
        )
        if job in _FOLDED:
            data = _FOLDED[job](theirs.data if theirs else None, ours.data if ours else None)
        elif ours is not None and ours.data:
            data = dict(ours.data)
        else:
            data = _renamed_data(job, dict(theirs.data or {}) if theirs else {}, prefix)
        last_run = max(s.last_run for s in states.values())
        stmt = insert(JobState).values(
            job=job, chat_id=target_id, cursor=cursor, last_run=last_run, data=data
        )
        await session.execute(
            stmt.on_conflict_do_update(
                index_elements=[JobState.job, JobState.chat_id],
                set_={"cursor": cursor, "last_run": last_run, "data": data},
            )
        )
        merged.append(CursorMerge(job, cursor, passed))
    await session.execute(
        delete(JobState).where(JobState.chat_id == source_id).execution_options(synchronize_session=False)
    )
    return merged


def _renamed_data(job: str, data: dict[str, Any], prefix: str) -> dict[str, Any]:
    """FROM's job data for INTO: the topic check's thread state with its message keys renamed."""
    if job == TOPIC_CHECK and data.get("disentangler"):
        try:
            data["disentangler"] = rekey_state(data["disentangler"], lambda key: prefix + key)
        except ValueError as exc:  # an unreadable state: the check starts a fresh one
            log.warning("topic check state of the merged chat dropped: %s", exc)
            data.pop("disentangler")
    return data


async def _combined_cursor(
    session: AsyncSession, source: tuple[int, int], target: tuple[int, int]
) -> tuple[int, int]:
    """The cursor of the merged chat, and how many messages waiting in either chat it passes over.

    A job has read a chat's messages up to its cursor (ids only grow). Any value from a chat's cursor
    up to just below its next unread message says the same for that chat; where the two ranges
    overlap (always, when one chat's messages all came after the other's were read), their common
    value keeps every message read once. Otherwise no single cursor can, and the larger one is taken:
    a message is never read twice (counts, topics and facts would double), and the few it passes over
    stay in the raw-message recall."""
    low = max(source[1], target[1])
    unread = [await _next_unread(session, chat_id, cursor) for chat_id, cursor in (source, target)]
    if all(next_id is None or low < next_id for next_id in unread):
        return low, 0
    passed = 0
    for chat_id, cursor in (source, target):
        count = await session.execute(
            select(func.count()).where(Message.chat_id == chat_id, Message.id > cursor, Message.id <= low)
        )
        passed += int(count.scalar_one())
    return low, passed


async def _next_unread(session: AsyncSession, chat_id: int, cursor: int) -> int | None:
    found = await session.execute(
        select(func.min(Message.id)).where(Message.chat_id == chat_id, Message.id > cursor)
    )
    value = found.scalar_one_or_none()
    return None if value is None else int(value)


async def _check_nothing_left(session: AsyncSession, source_id: int) -> None:
    """Refuse (rolling everything back) when a row of FROM is still there: deleting the chat would
    cascade it away or leave it behind, so a table the merge does not know would lose memory."""
    for column in chat_columns():
        if column.table.name in KEPT:
            continue
        left = await session.execute(
            select(func.count()).select_from(column.table).where(column == source_id)
        )
        if int(left.scalar_one()):
            raise ChatMergeError(
                f"{column.table.name}.{column.name} still holds rows of chat {source_id}: this version does "
                "not know how to merge them; nothing was changed"
            )


def describe(report: MergeReport) -> Sequence[str]:
    """Lines for a dry run: the counts, the cursors, and the notes that would be renamed."""
    lines = [report.summary()]
    for cursor in report.cursors:
        note = f", passing over {cursor.passed_over} waiting messages" if cursor.passed_over else ""
        lines.append(f"  cursor {cursor.job}: {cursor.cursor}{note}")
    lines.extend(f"  note {old!r} → {new!r}" for old, new in report.notes if old != new)
    return lines
