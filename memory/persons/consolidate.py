"""Consolidation: facts about people from new messages, merged into their profiles incrementally.

Per chat, a cursor in `job_state` marks the last message processed; each run reads at most
`consolidation_batch` newer messages, so the work is O(new messages + facts of the people in them),
never O(N²) over a person's history (Mio's bottleneck). A batch is written in one transaction with the
cursor, unless the cursor moved, a message or person was deleted, or a chat merge changed the chat
(memory.chat_marks) meanwhile: it is then read again at a later run. Facts come only from
- the person's own words (`speech.own_text`: quoted, forwarded and reported speech are blanked, and
  other people's messages are never about the speaker — MaiBot #1734), or
- an explicit statement naming them ("小红住在北京"), offline only.
The offline path (`extract_facts`) always runs; with a model for task "person", the LLM adds facts
and dated events from each person's own messages, checked against those messages. Superseded facts
stay in the table and the change goes on the timeline.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial

from pydantic import Field
from sqlalchemy import select
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.ext.asyncio import AsyncSession

from memory.batch_check import BatchStart, batch_outdated
from memory.chat_marks import merge_mark
from memory.commands import is_memory_command
from memory.history.source import chats_with_messages_after
from memory.model_answer import ModelAnswer
from memory.models import JobState, Message, PersonFact, PersonLlmGap
from memory.offload import thread_work_in_runs
from memory.persons import store
from memory.persons.aliases import AliasIndex
from memory.persons.card import DEFAULT_LABELS
from memory.persons.config import PersonsConfig
from memory.persons.fact_edits import without_overruled
from memory.persons.facts import FAVORITE_PREFIX, Fact, Retraction, Statement, extract_statements, merge_facts
from memory.persons.forgotten import Forgotten, all_forgotten
from memory.persons.resolver import PersonResolver
from memory.persons.speech import Utterance, own_text
from memory.persons.survivors import Identity, current_ids, identities, moved_statements
from memory.ports import LLMPort, LLMUnavailable
from memory.storage import Database
from memory.text import analysed, normalize, truncate

log = logging.getLogger(__name__)

JOB = "person_consolidation"
LLM_TASK = "person"
LLM_CHUNK = 60
LLM_MESSAGE_CHARS = 200
MAX_FACT_CHARS = 40
KNOWN_KEYS = frozenset(DEFAULT_LABELS)


@dataclass(slots=True)
class ConsolidationReport:
    """What one run did."""

    chats: int = 0
    messages: int = 0
    facts_added: int = 0
    facts_superseded: int = 0
    events_added: int = 0
    llm_calls: int = 0
    llm_fallbacks: int = 0
    llm_gaps: int = 0  # chunks of messages left for the model to read later

    def add(self, other: ConsolidationReport) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class LlmFact(ModelAnswer):
    message_id: int
    key: str = Field(max_length=64)
    value: str = Field(max_length=200)


class LlmEvent(ModelAnswer):
    message_id: int
    text: str = Field(max_length=200)


class PersonFactsAnswer(ModelAnswer):
    """The JSON the model returns: facts and dated events, each tied to one message id."""

    facts: list[LlmFact] = Field(default_factory=list)
    events: list[LlmEvent] = Field(default_factory=list)


_INSTRUCTIONS = (
    "You read group-chat messages and note what each speaker says about THEMSELVES in their own "
    "words. Ignore text inside quotes, forwarded text, things they report others said, questions, "
    "jokes and hypotheticals; never attribute anything to someone other than the speaker of the "
    "message it came from. Facts are stable attributes with keys: "
    + ", ".join(sorted(KNOWN_KEYS))
    + ", or favorite:<thing>. Values are short (a few words), copied from the message. Events are "
    "dated happenings in the speaker's life (moved, changed job, got a pet, a trip), one short "
    "sentence each. Answer JSON: "
    '{"facts": [{"message_id": 1, "key": "location", "value": "杭州"}], '
    '"events": [{"message_id": 1, "text": "搬到了杭州"}]}. Empty lists when there is nothing.'
)


@dataclass(frozen=True, slots=True)
class Item:
    """A message as consolidation reads it: its utterance, ids, and the speaker's own words."""

    utterance: Utterance
    message_id: int
    person_id: int
    own: str


class PersonConsolidator:
    """Runs consolidation for every chat with new messages (bounded per chat per run)."""

    def __init__(
        self,
        db: Database,
        resolver: PersonResolver,
        config: Callable[[], PersonsConfig],
        llm: LLMPort | None = None,
    ) -> None:
        self.db = db
        self.resolver = resolver
        self.config = config
        self.llm = llm

    async def run(self, now: datetime) -> ConsolidationReport:
        """One pass over the chats with messages past their cursor (one query finds them: a bot in
        many quiet chats would otherwise read each of them at every run)."""
        async with self.db.read() as session:
            cursors = {
                int(chat): int(cursor)
                for chat, cursor in await session.execute(
                    select(JobState.chat_id, JobState.cursor).where(JobState.job == JOB)
                )
            }
            chat_ids = await chats_with_messages_after(session, cursors)
        total = ConsolidationReport()
        for chat_id in chat_ids:
            total.add(await self.run_chat(chat_id, now))
        return total

    async def run_chat(self, chat_id: int, now: datetime) -> ConsolidationReport:
        """Consolidate the next batch of one chat's messages; resumes from its cursor."""
        config = self.config()
        report = ConsolidationReport()
        async with self.db.read() as session:
            mark = await merge_mark(session, chat_id)
            cursor = await _cursor(session, chat_id)
            rows = list(
                (
                    await session.scalars(
                        select(Message)
                        .where(Message.chat_id == chat_id, Message.id > cursor)
                        .order_by(Message.id)
                        .limit(config.consolidation_batch)
                    )
                ).all()
            )
            if not rows or mark is None:
                return report
            forgotten = await all_forgotten(session)
            utterances = await utterances_of(session, chat_id, rows, forgotten)
            people = await identities(session, (r.person_id for r in rows if r.person_id is not None))
        read = await read_utterances(self.resolver, chat_id, utterances)
        items = [item for item, _ in read]
        found = [statement for _, statements in read for statement in statements]
        named = {int(s.person_id) for s in found} - people.keys()
        if named:  # people a message names, from the chat's names
            async with self.db.read() as session:
                people |= await identities(session, named)
        events: list[tuple[Item, str]] = []
        unread: list[list[Item]] = []
        if config.use_llm and self.llm is not None and items:
            llm_facts, events, unread = await self._ask_llm(items, report)
            found.extend(llm_facts)
        async with self.db.write() as session:
            if await batch_outdated(session, BatchStart(JOB, chat_id, cursor, mark), [r.id for r in rows]):
                return ConsolidationReport()
            if await all_forgotten(session) != forgotten:  # what was found may be about them
                log.info("chat %s: a person was forgotten meanwhile; batch left for later", chat_id)
                return ConsolidationReport()
            found, events = await to_survivors(session, people, found, events)
            await apply_statements(session, chat_id, found, report)
            await add_events(session, chat_id, events, report)
            for chunk in unread:  # the model is asked about them once it answers (memory.persons.relearn)
                session.add(
                    PersonLlmGap(
                        chat_id=chat_id,
                        message_ids=[i.message_id for i in chunk],
                        time=max(store.ts(i.utterance.time) for i in chunk),
                    )
                )
            report.llm_gaps += len(unread)
            await _set_cursor(session, chat_id, rows[-1].id, store.ts(now))
        report.chats = 1
        report.messages = len(rows)
        return report

    async def _ask_llm(
        self, items: Sequence[Item], report: ConsolidationReport
    ) -> tuple[list[Fact], list[tuple[Item, str]], list[list[Item]]]:
        """The model's facts and events about `items`, and the chunks of them the model set up did not
        read (it was over budget or failed: they are noted for a later run to ask about)."""
        assert self.llm is not None
        facts: list[Fact] = []
        events: list[tuple[Item, str]] = []
        speaking = [i for i in items if i.own.strip()]
        chunks = [speaking[start : start + LLM_CHUNK] for start in range(0, len(speaking), LLM_CHUNK)]
        # No model set up, or one a cap of 0 keeps offline: nothing is owed, or a bot that never asks
        # one would note every message.
        owed = chunks if self.llm.configured(LLM_TASK) else []
        if not self.llm.available(LLM_TASK):
            return facts, events, owed
        for n, chunk in enumerate(chunks):
            try:
                chunk_facts, chunk_events = await ask_model(self.llm, chunk)
            except LLMUnavailable as exc:
                log.info("person consolidation offline for this batch: %s", exc.reason)
                report.llm_fallbacks += 1
                return facts, events, owed[n:]
            report.llm_calls += 1
            facts.extend(chunk_facts)
            events.extend(chunk_events)
        return facts, events, []


async def ask_model(llm: LLMPort, chunk: Sequence[Item]) -> tuple[list[Fact], list[tuple[Item, str]]]:
    """The facts and dated events the model finds in `chunk` (at most LLM_CHUNK speaking items), each
    checked against the message it cites; raises LLMUnavailable."""
    by_id = {i.message_id: i for i in chunk}
    prompt = [
        {"role": "system", "content": _INSTRUCTIONS},
        {"role": "user", "content": "\n".join(_prompt_line(i) for i in chunk)},
    ]
    answer = await llm.complete_json(LLM_TASK, prompt, PersonFactsAnswer)
    facts = [f for f in (_checked_fact(a, by_id) for a in answer.facts) if f is not None]
    events = []
    for event in answer.events:
        item = by_id.get(event.message_id)
        text = " ".join(event.text.split())
        if item is not None and text:
            events.append((item, truncate(text, 120)))
    return facts, events


async def to_survivors(
    session: AsyncSession,
    people: Mapping[int, Identity],
    found: Sequence[Statement],
    events: Sequence[tuple[Item, str]],
) -> tuple[list[Statement], list[tuple[Item, str]]]:
    """`found` and `events` about the people read as `people` as they are now, in the writing
    transaction: a person merged away meanwhile (`qunyi people merge`) has them written to the
    survivor, one gone is left out (memory.persons.survivors)."""
    ids = await current_ids(session, people)
    moved = []
    for item, text in events:
        person = ids.get(item.person_id)
        if person is not None:
            moved.append((replace(item, person_id=person), text))
    return moved_statements(found, ids), moved


async def add_events(
    session: AsyncSession, chat_id: int, events: Sequence[tuple[Item, str]], report: ConsolidationReport
) -> None:
    """Put the model's dated events on the timelines of the people who told them."""
    for item, text in events:
        await store.add_timeline(
            session, item.person_id, chat_id, store.ts(item.utterance.time), text, [item.message_id]
        )
        report.events_added += 1


async def apply_statements(
    session: AsyncSession, chat_id: int, found: Sequence[Statement], report: ConsolidationReport
) -> None:
    """Merge `found` into the facts of the people they are about, in chat `chat_id`: new facts added,
    superseded ones retired with the change on the timeline."""
    by_person: dict[int, list[Statement]] = defaultdict(list)
    for fact in await without_overruled(session, chat_id, found):
        by_person[int(fact.person_id)].append(fact)
    if not by_person:
        return
    rows = list(
        (
            await session.scalars(
                select(PersonFact).where(
                    PersonFact.person_id.in_(list(by_person)),
                    PersonFact.chat_id == chat_id,
                    PersonFact.superseded_at.is_(None),
                )
            )
        ).all()
    )
    held: dict[tuple[str, str, str], PersonFact] = {_ident(store.to_fact(r)): r for r in rows}
    for person_id, new in by_person.items():
        existing = [store.to_fact(r) for r in rows if r.person_id == person_id]
        retractions = {r.message_key: r for r in new if isinstance(r, Retraction)}
        result = merge_facts(existing, new)
        for fact in result.current:
            row = held.get(_ident(fact))
            if row is None:
                session.add(_row(fact, chat_id))
                report.facts_added += 1
            elif tuple(str(m) for m in row.seen_message_ids or ()) != fact.seen_keys:
                row.seen_message_ids = [int(k) for k in fact.seen_keys if k.isdigit()]
        for fact in result.superseded:
            row = held.get(_ident(fact))
            if row is not None and row.superseded_at is not None:
                continue
            if row is None:
                session.add(_row(fact, chat_id))
            else:
                row.superseded_at = store.ts(fact.superseded_at or fact.time)
                row.superseded_by = _message_id(fact.superseded_by)
            report.facts_superseded += 1
            newer: Fact | Retraction | None = _newer(fact, result.current)
            if newer is None or newer.time < fact.time:
                newer = retractions.get(fact.superseded_by or "")
            if newer is not None:
                await store.add_timeline(
                    session,
                    person_id,
                    chat_id,
                    store.ts(newer.time),
                    _change_text(fact, newer),
                    [m for m in (_message_id(fact.message_key), _message_id(newer.message_key)) if m],
                    kind="change",
                )
    await session.flush()


def _prompt_line(item: Item) -> str:
    """One message for the model: its id, the speaker, and only the speaker's own words."""
    words = truncate(" ".join(item.own.split()), LLM_MESSAGE_CHARS)
    return f"[{item.message_id}] person {item.person_id}: {words}"


def _checked_fact(answer: LlmFact, by_id: dict[int, Item]) -> Fact | None:
    """An LLM fact kept only when it cites a message of the batch, has a known key, and its value is
    in that message's own words (so quotes and other people's text cannot turn into facts)."""
    item = by_id.get(answer.message_id)
    if item is None:
        return None
    key = answer.key.strip().lower()
    if key not in KNOWN_KEYS and not key.startswith(FAVORITE_PREFIX):
        return None
    value = " ".join(answer.value.split())
    if not value or len(value) > MAX_FACT_CHARS:
        return None
    start = normalize(item.own).find(normalize(value))
    if start < 0:
        return None
    return Fact(
        person_id=str(item.person_id),
        key=key,
        value=value,
        message_key=str(item.message_id),
        time=item.utterance.time,
        span=(start, start + len(value)),
        text=value,
        source="llm",
        confidence=0.7,
    )


async def utterances_of(
    session: AsyncSession, chat_id: int, rows: Sequence[Message], forgotten: dict[int, Forgotten]
) -> list[tuple[Utterance, int, int]]:
    """(utterance, message id, person id) for the messages worth reading: not the bot's, not memory
    commands, not what a person whose memory was deleted said before their request (`forgotten`). A
    stored forward is read as one (`Utterance.forwarded`): none of it is its sender's own words, so it
    gives no statement and is not shown to the model, as on the live path."""
    platform = await store.platform_of(session, chat_id)
    persons = await store.person_ids_for(session, platform, (m for r in rows for m in r.mentions or ()))
    senders = await store.senders_of(session, chat_id, (r.reply_to for r in rows if r.reply_to))
    items = []
    for row in rows:
        if row.is_bot or row.person_id is None or is_memory_command(row.text):
            continue
        request = forgotten.get(row.person_id)
        if request is not None and request.covers(row.id, row.time, row.first_id):
            continue
        text = analysed(store.own_words(row.text, row.segments))
        reply_to = senders.get(row.reply_to) if row.reply_to else None
        utterance = Utterance(
            key=str(row.id),
            speaker_id=str(row.person_id),
            text=text,
            time=store.from_ts(row.time),
            mentioned_ids=tuple(str(persons[m]) for m in row.mentions or () if m in persons),
            reply_to_id=str(reply_to) if reply_to is not None else None,
            forwarded=row.forwarded,
        )
        items.append((utterance, row.id, row.person_id))
    return items


async def read_utterances(
    resolver: PersonResolver, chat_id: int, utterances: Sequence[tuple[Utterance, int, int]]
) -> list[tuple[Item, list[Statement]]]:
    """Each utterance's item and the statements found offline in it, against the chat's names."""
    index = await resolver.index(chat_id)
    # Seconds of CPU for a batch of long messages (speech masks, a name search in every clause): off
    # the event loop, in runs a shutdown can stop between. Threads get plain values only, never the
    # session or its rows.
    return await thread_work_in_runs(utterances, lambda u: len(u[0].text), partial(_read, index=index))


def _read(
    utterances: Sequence[tuple[Utterance, int, int]], index: AliasIndex
) -> list[tuple[Item, list[Statement]]]:
    """Each utterance's item (with the speaker's own words) and the statements found offline in it."""
    read = []
    for u, message_id, person_id in utterances:
        own = own_text(u.text, forwarded=u.forwarded)
        read.append((Item(u, message_id, person_id, own), extract_statements(u, index)))
    return read


async def _cursor(session: AsyncSession, chat_id: int) -> int:
    found = await session.execute(
        select(JobState.cursor).where(JobState.job == JOB, JobState.chat_id == chat_id)
    )
    return found.scalar_one_or_none() or 0


async def _set_cursor(session: AsyncSession, chat_id: int, cursor: int, now: float) -> None:
    stmt = insert(JobState).values(job=JOB, chat_id=chat_id, cursor=cursor, last_run=now, data={})
    stmt = stmt.on_conflict_do_update(
        index_elements=[JobState.job, JobState.chat_id], set_={"cursor": cursor, "last_run": now}
    )
    await session.execute(stmt)


def _ident(fact: Fact) -> tuple[str, str, str]:
    return (fact.message_key, fact.key, normalize(fact.value))


def _message_id(key: str | None) -> int | None:
    return int(key) if key is not None and key.isdigit() else None


def _row(fact: Fact, chat_id: int) -> PersonFact:
    return PersonFact(
        person_id=int(fact.person_id),
        chat_id=chat_id,
        key=fact.key,
        value=fact.value,
        source=fact.source,
        confidence=fact.confidence,
        message_id=_message_id(fact.message_key),
        span_start=fact.span[0],
        span_end=fact.span[1],
        evidence=fact.text,
        time=store.ts(fact.time),
        superseded_at=store.ts(fact.superseded_at) if fact.superseded_at else None,
        superseded_by=_message_id(fact.superseded_by),
        seen_message_ids=[int(k) for k in fact.seen_keys if k.isdigit()],
    )


def _newer(old: Fact, current: Sequence[Fact]) -> Fact | None:
    """The fact that replaced `old` (same key, or the opposite like/dislike of the same value)."""
    for fact in current:
        if fact.message_key == old.superseded_by and (fact.key == old.key or fact.value == old.value):
            return fact
    return None


def _label(key: str) -> str:
    if key.startswith(FAVORITE_PREFIX):
        return f"最喜欢的{key[len(FAVORITE_PREFIX) :]}"
    return DEFAULT_LABELS.get(key, key)


def _change_text(old: Fact, new: Fact | Retraction) -> str:
    if isinstance(new, Retraction):
        return f"{_label(old.key)}：{old.value} → 不再"
    if old.key == new.key:
        return f"{_label(old.key)}：{old.value} → {new.value}"
    return f"{_label(old.key)} {old.value} → {_label(new.key)} {new.value}"
