"""The jargon mining daemon: per chat, on a cooldown and a minimum of new messages, mine the new
messages into the dictionary and store the meanings members gave in them ("开炉就是去吃火锅", or
earlier, before the history read: memory.jargon.earlier), then infer meanings for entries that crossed
a count threshold.

State per chat lives in `job_state` (cursor = last message id mined, last_run = when), so a restart
resumes where it stopped. The offline discoverer's statistics are kept in memory per chat as a cache
and rebuilt from the chat's last `history_messages` stored messages when missing (after a restart, or
dropped after STATISTICS_IDLE_SECONDS without mining the chat) or stale: the cursor moved elsewhere,
or another chat was merged into it (memory.chat_merge, by this process or another). Each chat's run
is one write transaction (candidates upserted, cursor moved) that gives way when the cursor moved or
the chat was merged since it was read, so two runs never count one window twice and a run never
writes for a chat merged away meanwhile; model calls happen outside it.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import func, select, text

from memory import messages
from memory.batch_check import BatchStart, batch_outdated
from memory.chat_marks import merge_count, merge_mark
from memory.directory import members
from memory.jargon import dictionary, extract
from memory.jargon.dictionary import Scope
from memory.jargon.discovery import Discoverer, DiscoveryParams
from memory.jargon.earlier import explained_earlier, to_miner
from memory.jargon.explanations import MemberMeaning, member_meanings
from memory.jargon.inference import run_inference
from memory.jargon.types import Candidate, MinerMessage
from memory.models import Chat, JobState, Message
from memory.offload import runs
from memory.persons.config import ALIAS_SOURCES
from memory.persons.store import alias_entries
from memory.ports import LLMPort, LLMUnavailable
from memory.recall.scope import ScopePolicy
from memory.storage import Database
from memory.text import normalize
from tasks.failure_pause import FailurePause
from tasks.registry import JobSpec

log = logging.getLogger(__name__)

JOB_NAME = "jargon_mining"
INFERENCE_PAUSE_MAX_SECONDS = 600.0
"""The longest wait before asking a model that failed again (the wait doubles from the cooldown)."""
DEFAULT_THRESHOLDS: tuple[int, ...] = (2, 4, 8, 12, 24, 60, 100)
MAX_EXPLAINED_TERMS = 500
"""How many terms' member-given meanings a chat's cached statistics hold (the latest explained)."""
MAX_LOOKED_UP_TERMS = 5000
"""How many terms a chat's cached statistics remember having looked up in its older messages."""
STATISTICS_IDLE_SECONDS = 3600.0
"""The statistics of a chat not mined for this long are dropped from memory, and rebuilt from its stored
messages at its next run (as after a restart): a bot in many chats would otherwise hold those of every
chat it ever mined (about 1 MB for 3,000 chat-sized messages, far more for long ones), while a quiet
chat is mined once in days, its small history read again in moments."""


@dataclass(frozen=True, slots=True)
class MiningSettings:
    """What the job needs from `[jargon]` (see config.toml for each key)."""

    enabled: bool = True
    cooldown_seconds: float = 20.0
    min_new_messages: int = 10
    history_messages: int = 3000
    max_window_messages: int = 500
    scope: Scope = "global"
    thresholds: tuple[int, ...] = DEFAULT_THRESHOLDS
    extractor: Literal["offline", "llm"] = "offline"
    max_evidence: int = 20
    inferences_per_run: int = 20
    discovery: DiscoveryParams = field(default_factory=DiscoveryParams)
    # The `[recall]` settings: a chat whose memory never leaves it (`ScopePolicy.keeps_to_itself`:
    # blacklisted, or private) keeps its slang in its own dictionary whatever `scope` says.
    privacy: ScopePolicy = field(default_factory=ScopePolicy)


@dataclass(slots=True)
class _Cached:
    discoverer: Discoverer
    last_id: int
    merged: int  # memory.chat_marks.merge_mark of the chat when the statistics were built
    used: float  # when the chat was last mined (or its statistics built)
    # The meanings members gave in the history and the windows since, latest per term: a term is
    # often explained before it is counted often enough to be mined.
    explained: dict[str, MemberMeaning] = field(default_factory=dict)
    # True while `explained` holds every meaning given in the chat up to `last_id`: the history read
    # reached the chat's first message, and no meaning was let go since (MAX_EXPLAINED_TERMS).
    complete: bool = False
    # The terms whose meanings given before the history were looked up (memory.jargon.earlier).
    looked_up: dict[str, None] = field(default_factory=dict)

    def hear(self, window: Sequence[MinerMessage]) -> set[str]:
        """Add the meanings members gave in `window` (a later one of a term replaces the earlier);
        returns the terms explained in it."""
        found = member_meanings(window)
        for term, said in found.items():
            self.explained.pop(term, None)
            self.explained[term] = said
        self._keep_bounded()
        return set(found)

    def unheard(self, terms: Iterable[str]) -> list[str]:
        """Of `terms`, those a member may have explained before what was heard, not looked up yet."""
        if self.complete:
            return []
        return sorted(t for t in set(terms) if t not in self.explained and t not in self.looked_up)

    def recall(self, looked_up: Iterable[str], found: Iterable[MemberMeaning]) -> None:
        """Note the terms looked up before the history, and the meanings members gave them there
        (older than any heard: one heard since stays)."""
        self.looked_up.update(dict.fromkeys(looked_up))
        for said in found:
            self.explained.setdefault(said.term, said)
        self._keep_bounded()

    def _keep_bounded(self) -> None:
        while len(self.explained) > MAX_EXPLAINED_TERMS:
            del self.explained[next(iter(self.explained))]
            self.complete = False
        while len(self.looked_up) > MAX_LOOKED_UP_TERMS:
            del self.looked_up[next(iter(self.looked_up))]


@dataclass(slots=True)
class RunReport:
    """What one run of the job did."""

    chats: int = 0
    candidates: int = 0
    inferred: int = 0
    llm_extractions: int = 0


_NAME_SEPARATORS = re.compile(r"[\s|｜/／\\\-—_·•,，.。:：()（）\[\]【】<>《》]+")


def name_variants(names: Iterable[str]) -> list[str]:
    """Names with their parts: a group card like "浩子｜SRE" also excludes "浩子" (parts of two or more
    characters; shorter ones would exclude too much)."""
    out: dict[str, None] = {}
    for name in names:
        if not name:
            continue
        out[name] = None
        for part in _NAME_SEPARATORS.split(name):
            if len(part) >= 2:
                out[part] = None
    return list(out)


async def _observe(discoverer: Discoverer, messages: Sequence[MinerMessage]) -> None:
    """Add `messages` to the discoverer's statistics run by run: a job cancelled at shutdown stops
    after the run in hand, not after a window (or history) of long messages."""
    for run in runs(messages, _chars):
        await asyncio.to_thread(discoverer.observe, run)


def _chars(message: MinerMessage) -> int:
    return len(message.text)


_PENDING = text(
    "SELECT c.id, (SELECT count(*) FROM (SELECT 1 FROM messages m WHERE m.chat_id = c.id "
    "AND m.id > coalesce(j.cursor, 0) LIMIT :need)) FROM chats c "
    "LEFT JOIN job_state j ON j.job = :job AND j.chat_id = c.id"
)


class JargonMiningJob:
    """The job object; register `spec()` with the JobRunner, or call `run(now)` directly."""

    def __init__(
        self, db: Database, settings: Callable[[], MiningSettings], llm: LLMPort | None = None
    ) -> None:
        self.db = db
        self.settings = settings
        self.llm = llm
        self._cache: dict[int, _Cached] = {}
        self._seen_top: tuple[int, int] | None = None
        self._seen_settings: MiningSettings | None = None
        self._cooling: dict[int, float] = {}
        # After a run the model left terms due in (down, timing out, refusing), wait before asking
        # again, a cooldown at first, doubling at each such run: the terms stay due, and the job ticks
        # every cooldown/4 seconds, each tick asking the model.
        self._inference_pause = FailurePause("jargon inference", INFERENCE_PAUSE_MAX_SECONDS)

    def spec(self) -> JobSpec:
        """The runner entry: ticks several times per cooldown; each chat keeps its own cooldown."""
        return JobSpec(
            JOB_NAME, lambda: timedelta(seconds=max(1.0, self.settings().cooldown_seconds / 4)), self.run
        )

    async def _due_chats(self, now: float, settings: MiningSettings) -> list[tuple[int, int]]:
        """(chat id, cursor) of chats with enough new messages whose cooldown passed.

        A tick with no new message and no chat merge (memory.chat_merge: by this process or another)
        since the last one and no cooldown ending has nothing to do and costs one indexed query (the
        job ticks several times per cooldown). A chat mined at this tick counts as cooling, so
        messages left past its `max_window_messages` are mined once its cooldown ends, new messages
        or not."""
        async with self.db.read() as session:
            newest, merged = (await session.execute(select(func.max(Message.id), merge_count()))).one()
            top = (int(newest or 0), int(merged))
            unchanged = top == self._seen_top and settings == self._seen_settings
            if unchanged and all(now < until for until in self._cooling.values()):
                return []
            states = {
                s.chat_id: s
                for s in (await session.scalars(select(JobState).where(JobState.job == JOB_NAME))).all()
            }
            # Each chat's new messages after its own cursor (all of them for a chat never mined),
            # counted through the (chat, id) index and only up to `min_new_messages`, all a tick needs:
            # the work is the same however long the history. A range from the lowest cursor over every
            # chat's messages read, at each tick, everything the busy chats said since a quiet chat
            # (fewer new messages than the minimum) was last mined.
            pending = await session.execute(_PENDING, {"job": JOB_NAME, "need": settings.min_new_messages})
            counts: dict[int, int] = {int(c): int(n) for c, n in pending.all()}
        alive = set(counts)  # the statistics of a chat merged into another are never used again
        self._cache = {c: cached for c, cached in self._cache.items() if c in alive}
        due = []
        self._cooling = {}
        for chat_id, count in sorted(counts.items()):
            state = states.get(chat_id)
            if count < settings.min_new_messages:
                continue
            # A clock set back (last_run in the future) does not stop mining until it catches up.
            if state is not None and 0 <= now - state.last_run < settings.cooldown_seconds:
                self._cooling[chat_id] = state.last_run + settings.cooldown_seconds
                continue
            due.append((chat_id, state.cursor if state else 0))
            # Mined now, it cools down from now; what is left past its window is due after that.
            self._cooling[chat_id] = now + settings.cooldown_seconds
        self._seen_top, self._seen_settings = top, settings
        return due

    async def run(self, now: datetime) -> RunReport:
        """One tick: mine every chat that is due, then infer what crossed a threshold."""
        settings = self.settings()
        report = RunReport()
        if not settings.enabled:
            return report
        stamp = now.timestamp()
        try:
            for chat_id, cursor in await self._due_chats(stamp, settings):
                mined = await self.mine_chat(chat_id, cursor, stamp, settings, report)
                report.candidates += mined
        except BaseException:
            # A chat that was due is still due: the next tick must not take "no new message" for
            # "nothing to do" (a locked database would otherwise leave it unmined until new traffic).
            self._seen_top = None
            raise
        self._cache = {
            c: cached for c, cached in self._cache.items() if stamp - cached.used < STATISTICS_IDLE_SECONDS
        }
        if self.llm is not None and self.llm.available("jargon") and not self._inference_pause.waits(stamp):
            async with self.db.read() as session:
                kept_apart = await settings.privacy.kept_to_themselves(session)
            done = await run_inference(
                self.db,
                self.llm,
                settings.thresholds,
                stamp,
                limit=settings.inferences_per_run,
                kept_apart=kept_apart,
            )
            report.inferred = done.stored
            self._inference_pause.record(stamp, settings.cooldown_seconds, done.stopped)
        return report

    def cached_chats(self) -> set[int]:
        """The chats whose statistics are held in memory."""
        return set(self._cache)

    async def _discoverer(
        self, chat_id: int, cursor: int, merged: int, now: float, settings: MiningSettings
    ) -> Discoverer:
        cached = self._cache.get(chat_id)
        if (
            cached is None
            or cached.last_id != cursor
            or cached.merged != merged
            or cached.discoverer.history_size != settings.history_messages
            or cached.discoverer.params != settings.discovery
        ):
            discoverer = Discoverer(settings.discovery, settings.history_messages)
            async with self.db.read() as session:
                history = await messages.recent(session, chat_id, settings.history_messages, cursor + 1)
            heard = [to_miner(m) for m in history]
            await _observe(discoverer, heard)
            cached = _Cached(
                discoverer, cursor, merged, now, complete=len(history) < settings.history_messages
            )
            # the history's member meanings are parsed off the event loop, as its statistics are
            await asyncio.to_thread(cached.hear, heard)
            self._cache[chat_id] = cached
        cached.used = now
        return cached.discoverer

    async def _look_up_earlier(self, chat_id: int, cursor: int, cached: _Cached, terms: set[str]) -> None:
        """Look up the meanings members gave `terms` in the chat's messages up to `cursor`, before the
        history the statistics heard (a restart reads only its last `history_messages`), for those
        that still need one."""
        unheard = cached.unheard(terms)
        if not unheard:
            return
        async with self.db.read() as session:
            needing = await dictionary.unexplained(session, chat_id, unheard)
            found = await explained_earlier(session, chat_id, needing, cursor)
        cached.recall(needing, found)

    async def mine_chat(
        self, chat_id: int, cursor: int, now: float, settings: MiningSettings, report: RunReport
    ) -> int:
        """Mine one chat's messages after `cursor` if there are at least `min_new_messages`."""
        async with self.db.read() as session:
            merged = await merge_mark(session, chat_id)
            window_rows = await messages.after(session, chat_id, cursor, settings.max_window_messages)
            chat = await session.get(Chat, chat_id)
            if chat is None or merged is None or len(window_rows) < settings.min_new_messages:
                return 0
            scope: Scope = "chat" if settings.privacy.keeps_to_itself(chat) else settings.scope
            found = await members(session, chat_id)
            aliases = [entry.alias for entry in await alias_entries(session, chat_id, ALIAS_SOURCES)]
            names = name_variants([*(n for m in found for n in (m.name, m.nickname, m.card)), *aliases])
            exclude = await dictionary.rejected_terms(session, chat_id)
        window = [to_miner(m) for m in window_rows]
        discoverer = await self._discoverer(chat_id, cursor, merged, now, settings)
        cached = self._cache[chat_id]
        heard_now = await asyncio.to_thread(cached.hear, window)
        candidates: list[Candidate] | None = None
        try:
            if settings.extractor == "llm" and self.llm is not None and self.llm.available("jargon"):
                try:
                    result = await extract.extract(
                        self.llm, window, settings.discovery.filters, names, exclude
                    )
                    candidates = result.kept
                    report.llm_extractions += 1
                    await _observe(discoverer, window)
                except LLMUnavailable as exc:
                    log.info("jargon extraction by LLM unavailable (%s); using offline discovery", exc.reason)
            if candidates is None:
                await _observe(discoverer, window)
                # Seconds of CPU for a window of long messages: off the event loop, so replies go on,
                # and in runs, so that a job cancelled at shutdown stops after the run in hand.
                candidates = await discoverer.candidates_in_runs(window, exclude=exclude, names=names)
            # Meanings heard now, and those heard before of the terms counted now (which may have
            # become candidates only now): not every meaning ever heard at every run.
            counted = heard_now | {normalize(c.content) for c in candidates}
            await self._look_up_earlier(chat_id, cursor, cached, counted)
            last_id = window_rows[-1].id
            async with self.db.write() as session:
                start = BatchStart(JOB_NAME, chat_id, cursor, merged)
                if await batch_outdated(session, start, [m.id for m in window_rows]):
                    # Counted twice, or terms standing on what is gone: mine the window again next
                    # time, with statistics rebuilt from the messages kept.
                    self._cache.pop(chat_id, None)
                    return 0
                state = await session.get(JobState, (JOB_NAME, chat_id))
                await dictionary.upsert_mined(session, chat_id, scope, candidates, now, settings.max_evidence)
                said = [m for term, m in cached.explained.items() if term in counted]
                await dictionary.member_meanings(session, chat_id, said, now)
                if state is None:
                    session.add(
                        JobState(job=JOB_NAME, chat_id=chat_id, cursor=last_id, last_run=now, data={})
                    )
                else:
                    state.cursor, state.last_run = last_id, now
        except BaseException:
            # The statistics may hold the window, or part of it: rebuild them from the database next time.
            self._cache.pop(chat_id, None)
            raise
        self._cache[chat_id].last_id = last_id
        report.chats += 1
        return len(candidates)
