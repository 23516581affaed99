"""The topic check: a chat's new messages, in batches, assigned to cached topics (new or reused).

Per chat, a check runs when `batch_size` messages wait, or when the oldest waiting message is `max_wait`
old (or dated more than `max_wait` ahead of now, a wrong clock) and at least `min_messages` wait. A
chat quiet for `quiet_after` (its newest message that old) has its last waiting messages checked
whatever their number, and then all its cached topics packed, so the talk before a long silence still
becomes ChatHistory (a message dated more than `quiet_after` ahead of now, a wrong clock, does not
count as talk). A batch is assigned to topics by the LLM (one call
returning `[{topic, message_ids}]`, ids outside the batch dropped) when enabled and available, else —
and whenever the LLM fails or answers with nothing usable — offline: the online thread disentangler
(memory.topics.Disentangler) splits the batch into threads, and threads are placed on topics by their
known thread id, by term similarity to a cached topic, by adjacency (short threads join the topic of the
message just before them) or as new topics; near-duplicate titles merge. The disentangler runs on every
batch (also on the LLM path) so its per-chat state, kept in `job_state.data`, stays continuous. Messages
the full-text index leaves out — members' memory commands and the bot's answers to them, which quote
recalled memories — are passed over: packed, they would echo back in recall.

One batch is one write transaction: cache updates, the disentangler state and the cursor commit
together, so a crash repeats the batch from the old cursor and state; a batch whose chat a merge
changed meanwhile is left for a later run (memory.chat_marks). LLM calls happen outside
transactions. After each batch the topics it made ready are packed, one transaction each
(memory.history.pack), so a ready topic never takes in a later batch of the same run.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.batch_check import BatchStart, batch_outdated
from memory.chat_marks import merge_mark
from memory.history import source, terms
from memory.history.digest import message_chars, speaker_line, terms_in_runs, theme_of_terms
from memory.history.pack import Packed, PackOptions, pack_entry
from memory.history.source import SourceMessage
from memory.history.terms import TermWeights
from memory.history.titles import most_similar
from memory.model_answer import ModelAnswer
from memory.models import JobState, TopicCacheEntry
from memory.offload import runs
from memory.ports import LLMPort, LLMUnavailable
from memory.storage import Database
from memory.text import analysed, truncate
from memory.topics import cache
from memory.topics.disentangle import Disentangler
from memory.topics.message import ThreadMessage
from memory.topics.params import DisentangleParams

log = logging.getLogger(__name__)

JOB = "topic_check"
TITLE_CHARS = 48
Trigger = Literal["count", "time", "forced", "quiet"]


@dataclass(frozen=True, slots=True)
class TopicCheckSettings:
    """Cadence of the check, how batches are placed on topics, and when topics are packed."""

    batch_size: int = 80
    max_wait: timedelta = timedelta(hours=8)
    min_messages: int = 20
    quiet_after: timedelta | None = timedelta(days=1)
    keep_batches_without_bot: bool = True
    pack: cache.PackRules = field(default_factory=cache.PackRules)
    title_merge_ratio: float = 0.9
    reuse_similarity: float = 0.3
    attach_gap: timedelta = timedelta(minutes=10)
    reuse_gap: timedelta = timedelta(days=1)
    short_thread: int = 3
    use_llm: bool = False
    max_batches_per_run: int = 4
    pack_options: PackOptions = field(default_factory=PackOptions)
    disentangle: DisentangleParams | None = None


@dataclass(slots=True)
class CheckReport:
    """What one chat's check did."""

    chat_id: int
    batches: int = 0
    messages: int = 0
    path: list[str] = field(default_factory=list)
    created: int = 0
    updated: int = 0
    dropped_ids: int = 0
    packed: list[Packed] = field(default_factory=list)


# --- the slots a batch is placed on ---------------------------------------------------------------


@dataclass(slots=True)
class Slot:
    """A topic during placement: an existing cache row (`entry_id`) or a new one."""

    entry_id: int | None
    title: str
    terms: TermWeights
    threads: set[str]
    provenance: str
    first: float | None = None
    last: float | None = None
    messages: list[SourceMessage] = field(default_factory=list)
    added_threads: set[str] = field(default_factory=set)
    added_terms: TermWeights = field(default_factory=dict)

    def add(self, messages: Sequence[SourceMessage], weights: TermWeights) -> None:
        self.messages.extend(messages)
        self.terms = terms.merge(self.terms, weights)
        self.added_terms = terms.merge(self.added_terms, weights)
        for m in messages:
            self.first = m.time if self.first is None else min(self.first, m.time)
            self.last = m.time if self.last is None else max(self.last, m.time)

    def near(self, messages: Sequence[SourceMessage], gap: timedelta) -> bool:
        """Whether `messages` lie within `gap` of the topic's own messages (true of an empty topic)."""
        if self.first is None or self.last is None or not messages:
            return True
        limit = gap.total_seconds()
        start, end = min(m.time for m in messages), max(m.time for m in messages)
        return start - self.last <= limit and self.first - end <= limit

    def claim(self, thread: str) -> None:
        self.threads.add(thread)
        self.added_threads.add(thread)


def slots_of(entries: Sequence[TopicCacheEntry]) -> list[Slot]:
    return [
        Slot(
            e.id,
            e.title,
            dict(e.terms or {}),
            set(e.thread_keys),
            e.provenance,
            e.first_time if e.message_ids else None,
            e.last_time if e.message_ids else None,
        )
        for e in entries
    ]


@dataclass(frozen=True, slots=True)
class Threaded:
    """A batch split into disentangled threads: thread id per message, threads in order of appearance."""

    thread_of: dict[int, str]
    groups: dict[str, list[SourceMessage]]


async def split_threads_in_runs(disentangler: Disentangler, batch: Sequence[SourceMessage]) -> Threaded:
    """`split_threads`, run by run (memory.offload.runs), each run one worker-thread call: a check
    cancelled at shutdown stops after the run in hand. The same threads as in one call (the
    disentangler reads the messages one by one in any case)."""
    threaded = Threaded({}, {})
    for run in runs(batch, message_chars):
        part = await asyncio.to_thread(split_threads, disentangler, run)
        threaded.thread_of.update(part.thread_of)
        for thread, messages in part.groups.items():
            threaded.groups.setdefault(thread, []).extend(messages)
    return threaded


def split_threads(disentangler: Disentangler, batch: Sequence[SourceMessage]) -> Threaded:
    thread_of: dict[int, str] = {}
    groups: dict[str, list[SourceMessage]] = {}
    for m in batch:
        thread = disentangler.assign(
            ThreadMessage(
                key=m.platform_message_id,
                time=m.when,
                speaker=m.user_id,
                speaker_names=m.names,
                text=m.text,
                reply_to=m.reply_to,
                mentions=m.mentions,
            )
        )
        thread_of[m.id] = thread
        groups.setdefault(thread, []).append(m)
    return Threaded(thread_of, groups)


def place_offline(
    groups: dict[str, list[SourceMessage]],
    order: Sequence[SourceMessage],
    slots: list[Slot],
    settings: TopicCheckSettings,
    found: Mapping[int, Sequence[str]],
) -> None:
    """Place thread groups on slots (adding new slots to `slots`), in order of first message. A thread
    joins a topic by similar terms or title only within `reuse_gap` of its messages (old history
    imported after live messages stays out of today's topics). `found`: the terms of each message of
    `order` (`terms_in_runs` of `order`)."""
    by_thread = {t: s for s in slots for t in s.threads}
    slot_of_message: dict[int, Slot] = {}
    previous = {b.id: a for a, b in itertools.pairwise(order)}
    for thread, messages in sorted(groups.items(), key=lambda kv: (kv[1][0].time, kv[1][0].id)):
        weights = terms.weigh_terms(found[m.id] for m in messages)
        slot = by_thread.get(thread)
        near = [s for s in slots if s.near(messages, settings.reuse_gap)]
        if slot is None and weights:
            scored = [(terms.cosine(weights, s.terms), -i, s) for i, s in enumerate(near)]
            best = max(scored, default=None, key=lambda x: (x[0], x[1]))
            if best is not None and best[0] >= settings.reuse_similarity:
                slot = best[2]
        if slot is None and len(messages) < settings.short_thread:
            before = previous.get(messages[0].id)
            gap = settings.attach_gap.total_seconds()
            if (
                before is not None
                and before.id in slot_of_message
                and abs(messages[0].time - before.time) <= gap
            ):
                slot = slot_of_message[before.id]
        if slot is None:
            title = theme_of_terms(weights)
            slot = most_similar(title, [(s, s.title) for s in near], settings.title_merge_ratio)
            if slot is None:
                slot = Slot(None, title, {}, set(), "offline")
                slots.append(slot)
        slot.add(messages, weights)
        slot.claim(thread)
        by_thread[thread] = slot
        for m in messages:
            slot_of_message[m.id] = slot


# --- the LLM path ------------------------------------------------------------------------------


class TopicItem(ModelAnswer):
    topic: str = Field(max_length=200)
    message_ids: list[int] = Field(default_factory=list, max_length=1000)


class TopicAnswer(ModelAnswer):
    """The JSON the topic task must return."""

    topics: list[TopicItem] = Field(max_length=200)


TOPIC_SYSTEM = (
    "你在为群聊机器人整理话题。给你已有话题(标题和最近内容)和一批带编号的新消息。"
    "把每条新消息归入一个话题:能延续已有话题就用它原来的标题,否则起一个简短的新标题。"
    '返回 {"topics": [{"topic": 标题, "message_ids": [编号...]}]},编号只能来自这批消息。'
    " Group the numbered chat messages into topics; reuse an existing topic title when it continues."
)


class UnusableAnswer(ValueError):
    """The LLM answered, but nothing in the answer can be used."""


def topic_prompt(
    existing: Sequence[tuple[str, Sequence[SourceMessage]]], batch: Sequence[SourceMessage]
) -> list[dict[str, Any]]:
    lines = ["已有话题 / existing topics:"]
    for title, recent in existing:
        sample = " / ".join(speaker_line(m, 60) for m in recent)
        lines.append(f"- {title}: {sample}" if sample else f"- {title}")
    if not existing:
        lines.append("(无 / none)")
    lines.append("\n新消息 / new messages:")
    lines.extend(f"[{m.id}] {m.when:%m-%d %H:%M} {speaker_line(m, 300)}" for m in batch)
    return [{"role": "system", "content": TOPIC_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def validated(
    answer: TopicAnswer, batch: Sequence[SourceMessage]
) -> tuple[list[tuple[str, list[SourceMessage]]], int]:
    """The answer's usable (title, messages) pairs and how many ids were dropped: ids not in the
    batch, repeated ids (the first topic keeps a message) and topics without a title."""
    in_batch = {m.id: m for m in batch}
    taken: set[int] = set()
    dropped = 0
    out: list[tuple[str, list[SourceMessage]]] = []
    for item in answer.topics:
        title = truncate(" ".join(item.topic.split()), TITLE_CHARS)
        keep = []
        for i in item.message_ids:
            if i in in_batch and i not in taken and title:
                taken.add(i)
                keep.append(in_batch[i])
            else:
                dropped += 1
        if keep:
            out.append((title, sorted(keep, key=lambda m: (m.time, m.id))))
    if not out:
        raise UnusableAnswer("no topic with a message id from the batch")
    return out, dropped


def place_llm(
    assigned: Sequence[tuple[str, list[SourceMessage]]],
    threaded: Threaded,
    order: Sequence[SourceMessage],
    slots: list[Slot],
    settings: TopicCheckSettings,
    found: Mapping[int, Sequence[str]],
) -> dict[str, list[SourceMessage]]:
    """Place the LLM's topics on slots by title (near-duplicates within `reuse_gap` merge); each thread
    all of whose messages it placed is claimed by the slot holding most of them. Returns the messages
    it left out by thread, in the order of `order`, for `place_offline` (`TopicCheck._place` weighs
    them first). `found`: the terms of each message of `order` (`terms_in_runs` of `order`)."""
    slot_of_message: dict[int, Slot] = {}
    for title, messages in assigned:
        near = [(s, s.title) for s in slots if s.near(messages, settings.reuse_gap)]
        slot = most_similar(title, near, settings.title_merge_ratio)
        if slot is None:
            slot = Slot(None, title, {}, set(), "llm")
            slots.append(slot)
        slot.add(messages, terms.weigh_terms(found[m.id] for m in messages))
        for m in messages:
            slot_of_message[m.id] = slot
    leftover: dict[str, list[SourceMessage]] = {}
    for m in order:
        if m.id not in slot_of_message:
            leftover.setdefault(threaded.thread_of[m.id], []).append(m)
    for thread, messages in threaded.groups.items():
        if thread in leftover:
            continue
        votes: dict[int, int] = {}
        for m in messages:
            votes[id(slot_of_message[m.id])] = votes.get(id(slot_of_message[m.id]), 0) + 1
        winner = max(votes.items(), key=lambda kv: kv[1])[0]
        next(s for s in slots if id(s) == winner).claim(thread)
    return leftover


# --- the check -------------------------------------------------------------------------------------


def trigger(
    pending: int, oldest: float | None, now: datetime, settings: TopicCheckSettings
) -> Trigger | None:
    """Whether a check is due: enough messages, or old enough messages and at least `min_messages`.

    An oldest waiting message dated more than `max_wait` ahead of now (every waiting message is, then)
    is a wrong clock: its age is unknown, and counted as negative it would hold the age trigger off
    until that date (up to the year 9000). It counts as having waited `max_wait`; one a little ahead
    waits at most `max_wait` past its date."""
    if pending >= settings.batch_size:
        return "count"
    if oldest is not None and pending >= max(settings.min_messages, 1):
        waited, max_wait = now.timestamp() - oldest, settings.max_wait.total_seconds()
        if waited >= max_wait or -waited > max_wait:
            return "time"
    return None


async def _job_state(session: AsyncSession, chat_id: int) -> JobState | None:
    return await session.get(JobState, (JOB, chat_id))


async def forget_messages(session: AsyncSession, message_ids: Sequence[int]) -> None:
    """Take messages that are being deleted out of the disentangler state the check keeps per chat
    (inside the caller's transaction, before they go): it holds the words of the recent messages and
    counts of every word seen, and none of a deleted message's words may stay there."""
    by_chat: dict[int, list[SourceMessage]] = {}
    for m in await source.by_ids(session, message_ids):
        if m.searchable:  # the others were never shown to the disentangler
            by_chat.setdefault(m.chat_id, []).append(m)
    for chat_id, gone in by_chat.items():
        state = await _job_state(session, chat_id)
        if state is None or "disentangler" not in state.data:
            continue
        seen = [m for m in gone if m.id <= state.cursor]
        if not seen:
            continue
        disentangler = Disentangler(None, state.data["disentangler"])
        for m in seen:
            disentangler.forget(m.platform_message_id, m.text)
        state.data = {**state.data, "disentangler": disentangler.state()}


class TopicCheck:
    """Runs the topic check for every chat with new messages; `settings` is read at each run."""

    def __init__(
        self,
        db: Database,
        settings: Callable[[], TopicCheckSettings] | TopicCheckSettings,
        llm: LLMPort | None = None,
    ) -> None:
        self.db = db
        self._settings = settings if callable(settings) else (lambda: settings)
        self.llm = llm

    @property
    def settings(self) -> TopicCheckSettings:
        return self._settings()

    async def run(self, now: datetime) -> list[CheckReport]:
        """One pass over all chats with messages beyond their cursor; then packs whatever is ready."""
        async with self.db.read() as session:
            cursors = {
                s.chat_id: s.cursor
                for s in (await session.scalars(select(JobState).where(JobState.job == JOB))).all()
            }
            chats = await source.chats_with_messages_after(session, cursors)
            cached = set((await session.scalars(select(TopicCacheEntry.chat_id).distinct())).all())
        reports = []
        for chat_id in sorted(set(chats) | cached):
            reports.append(await self.run_chat(chat_id, now))
        return reports

    async def run_chat(self, chat_id: int, now: datetime, force: bool = False) -> CheckReport:
        """Check one chat: up to `max_batches_per_run` batches, each followed by packing the topics it
        made ready (as in MaiBot, a ready topic is packed before the next check could add to it).
        `force` checks whatever waits (at least one message) regardless of the triggers."""
        settings = self.settings
        report = CheckReport(chat_id)
        forced: Trigger | None = "forced" if force else None
        for _ in range(max(settings.max_batches_per_run, 1)):
            if not await self._one_batch(chat_id, now, settings, report, forced):
                break
            report.packed.extend(await self.pack_ready(chat_id, now, settings))
        quiet = await self._quiet(chat_id, now, settings)
        if quiet is not None and 0 < quiet <= settings.batch_size:
            await self._one_batch(chat_id, now, settings, report, "quiet")
            quiet = await self._quiet(chat_id, now, settings)
        report.packed.extend(await self.pack_ready(chat_id, now, settings, everything=quiet == 0))
        return report

    async def _quiet(self, chat_id: int, now: datetime, settings: TopicCheckSettings) -> int | None:
        """How many messages still wait in a chat that has been quiet for `quiet_after`; None if it
        has not (or the rule is off)."""
        if settings.quiet_after is None:
            return None
        quiet_for = settings.quiet_after.total_seconds()
        async with self.db.read() as session:
            # A message dated more than `quiet_after` ahead is a wrong clock, not talk (times up to the year
            # 9000 are accepted): counted, it would keep the chat from ever being quiet. One a little
            # ahead (a clock minutes fast) still counts, so a talk just begun is not packed.
            newest = await source.newest_time(session, chat_id, not_after=now.timestamp() + quiet_for)
            if newest is None and await source.newest_time(session, chat_id) is None:
                return None  # no messages at all
            if newest is not None and now.timestamp() - newest < quiet_for:
                return None
            state = await _job_state(session, chat_id)
            pending, _ = await source.pending_stats(session, chat_id, state.cursor if state else 0)
        return pending

    async def _one_batch(
        self,
        chat_id: int,
        now: datetime,
        settings: TopicCheckSettings,
        report: CheckReport,
        force: Trigger | None,
    ) -> bool:
        async with self.db.read() as session:
            mark = await merge_mark(session, chat_id)
            state = await _job_state(session, chat_id)
            cursor = state.cursor if state else 0
            data = dict(state.data) if state else {}
            before = dict(data)
            pending, oldest = await source.pending_stats(session, chat_id, cursor)
            why = trigger(pending, oldest, now, settings) or (force if pending else None)
            if why is None or mark is None:
                return False
            batch = await source.after_cursor(session, chat_id, cursor, settings.batch_size)
            entries = await cache.entries(session, chat_id)
            recent = {e.id: await source.by_ids(session, e.message_ids[-2:]) for e in entries}
        disentangler = Disentangler(settings.disentangle, data.get("disentangler"))
        usable = [replace(m, text=analysed(m.text)) for m in batch if m.searchable]
        # Segmenting and comparing a batch of long messages is seconds of CPU: off the event loop.
        threaded = await split_threads_in_runs(disentangler, usable)
        slots = slots_of(entries)
        path = "skipped"
        if settings.keep_batches_without_bot or any(m.is_bot for m in batch):
            path = await self._place(
                usable, threaded, slots, [(e.title, recent[e.id]) for e in entries], settings, report
            )
        data["disentangler"] = disentangler.state()
        read = [m.id for m in batch] + [m.id for shown in recent.values() for m in shown]
        written = await self._write(chat_id, (cursor, before, mark), batch[-1].id, data, slots, now, read)
        if written is not None:
            report.created += written[0]
            report.updated += written[1]
            report.batches += 1
            report.messages += len(batch)
            report.path.append(f"{why}:{path}")
        return written is not None

    async def _place(
        self,
        batch: Sequence[SourceMessage],
        threaded: Threaded,
        slots: list[Slot],
        existing: Sequence[tuple[str, Sequence[SourceMessage]]],
        settings: TopicCheckSettings,
        report: CheckReport,
    ) -> str:
        if not batch:
            return "empty"
        # Weighing the messages' terms (jieba) is seconds for long messages: off the event loop.
        found = await terms_in_runs(batch)
        if settings.use_llm and self.llm is not None and self.llm.available("topic"):
            try:
                answer = await self.llm.complete_json("topic", topic_prompt(existing, batch), TopicAnswer)
                assigned, dropped = validated(answer, batch)
            except (LLMUnavailable, UnusableAnswer) as exc:
                log.info("topic LLM answer not usable (%s); assigning offline", exc)
            else:
                report.dropped_ids += dropped
                leftover = await asyncio.to_thread(
                    place_llm, assigned, threaded, batch, slots, settings, found
                )
                if leftover:
                    # Weighed anew: the names left out of their terms are those of their own speakers,
                    # as when a batch is placed offline.
                    left = {m.id for messages in leftover.values() for m in messages}
                    rest = [m for m in batch if m.id in left]
                    found = await terms_in_runs(rest)
                    await asyncio.to_thread(place_offline, leftover, rest, slots, settings, found)
                return "llm"
        await asyncio.to_thread(place_offline, threaded.groups, batch, slots, settings, found)
        return "offline"

    async def _write(
        self,
        chat_id: int,
        start: tuple[int, dict[str, Any], int | None],
        new_cursor: int,
        data: dict[str, Any],
        slots: list[Slot],
        now: datetime,
        read: Sequence[int],
    ) -> tuple[int, int] | None:
        """Commit one batch: topics, idle counters, disentangler state and cursor, all or nothing.
        Returns (topics created, topics updated), or None when the cursor, the state or the chat's merge
        mark it started from (`start`) changed meanwhile or a message the placement read (`read`: the
        batch and the topics' samples) was deleted meanwhile: titles, terms and state may quote it, and
        a chat merged into this one has messages below the batch's last id that it did not read, so
        the batch is placed again at the next run."""
        cursor, before, mark = start
        async with self.db.write() as session:
            if await batch_outdated(session, BatchStart(JOB, chat_id, cursor, mark), read):
                return None
            state = await _job_state(session, chat_id)
            if (state.data if state else {}) != before:
                log.info("topic check of chat %s: its state changed meanwhile; batch left for later", chat_id)
                return None
            if state is None:
                state = JobState(job=JOB, chat_id=chat_id, cursor=cursor, last_run=0.0, data={})
                session.add(state)
            rows = {e.id: e for e in await cache.entries(session, chat_id)}
            updated: set[int] = set()
            created = 0
            for slot in slots:
                if not slot.messages:
                    continue
                row = rows.get(slot.entry_id) if slot.entry_id is not None else None
                if row is None:
                    row = cache.new_entry(chat_id, slot.title, now, slot.provenance)
                    session.add(row)
                    await session.flush()
                    created += 1
                cache.add_fragment(row, slot.messages, slot.added_threads, now, slot.added_terms)
                if row.provenance == "offline":
                    row.title = theme_of_terms(row.terms)
                updated.add(row.id)
            cache.mark_idle(rows.values(), updated)
            state.cursor = new_cursor
            state.last_run = now.timestamp()
            state.data = data
        return created, len(updated) - created

    async def pack_ready(
        self,
        chat_id: int,
        now: datetime,
        settings: TopicCheckSettings | None = None,
        everything: bool = False,
    ) -> list[Packed]:
        """Pack every ready topic of a chat (every cached one with `everything`), one transaction each."""
        settings = settings or self.settings
        async with self.db.read() as session:
            entries = await cache.entries(session, chat_id)
            ready = [e.id for e in entries if everything or settings.pack.reason(e)]
        packed = []
        for entry_id in ready:
            done = await pack_entry(self.db, entry_id, now, self.llm, settings.pack_options)
            if done is not None:
                packed.append(done)
        return packed
