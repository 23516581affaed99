"""A message of up to a million characters is stored and indexed whole, but the jobs and the record-time
analyses read only its first ANALYSED_CHARS characters (cut on a grapheme boundary), and the jobs work on
long batches in runs, one thread call each, so a job cancelled at shutdown stops after the run in hand."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from memory import offload
from memory.jargon.discovery import Discoverer
from memory.jargon.types import MinerMessage
from memory.models import Message
from memory.persons import consolidate, observe
from memory.persons.aliases import AliasIndex
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.persons.speech import Utterance
from memory.recall import RecallQuery, preferences
from memory.recall.setup import attach_recall
from memory.service import MemoryService
from memory.text import ANALYSED_CHARS, analysed
from memory.topics import check
from memory.topics.check import TopicCheck
from tasks.jargon_mining import JargonMiningJob
from tests.conftest import T0, make_message
from tests.memory.topics.test_check import SMALL, chain
from tests.tasks.test_jargon_mining import LINES, SETTINGS

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # one grapheme of five code points
# Varied sentences, so that what the analyses find is not one repeated character.
LONG = ("我住在杭州，周末去九溪爬山。" + "The meeting moved to 3pm, please be on time. ") * (
    ANALYSED_CHARS // 30
)


def test_a_short_text_is_analysed_whole() -> None:
    text = "以后叫我小胖" + FAMILY
    assert analysed(text) == text


def test_the_bound_cuts_before_a_grapheme_it_would_split() -> None:
    text = "a" * (ANALYSED_CHARS - 2) + FAMILY + "tail"
    cut = analysed(text)
    assert cut == "a" * (ANALYSED_CHARS - 2)
    assert analysed("a" * (ANALYSED_CHARS - 5) + FAMILY + "tail") == "a" * (ANALYSED_CHARS - 5) + FAMILY


def test_runs_hold_at_most_the_limit_and_a_longer_item_alone() -> None:
    assert list(offload.runs([3, 4, 10, 1, 1], lambda n: n, limit=8)) == [[3, 4], [10], [1, 1]]
    assert list(offload.runs([], lambda n: n, limit=8)) == []


async def _stored_text(memory: MemoryService, message_id: str) -> str:
    async with memory.db.read() as session:
        found = await session.scalar(select(Message.text).where(Message.platform_message_id == message_id))
    assert found is not None
    return found


async def test_jargon_mining_reads_the_bounded_prefix_and_the_message_stays_whole(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    observe_all = Discoverer.observe

    def spy(self: Discoverer, messages: Sequence[MinerMessage]) -> None:
        seen.extend(m.text for m in messages)
        observe_all(self, messages)

    monkeypatch.setattr(Discoverer, "observe", spy)
    lines = [*LINES[:-1], LINES[-1] + LONG]
    await memory.record_many(make_message(n, sender=f"u{n % 4}", text=t) for n, t in enumerate(lines))
    assert (await JargonMiningJob(memory.db, lambda: SETTINGS).run(T0)).chats == 1
    assert seen[:-1] == LINES[:-1]
    assert seen[-1] == analysed(lines[-1]) and len(seen[-1]) == ANALYSED_CHARS
    assert await _stored_text(memory, f"m{len(lines) - 1}") == lines[-1]


async def test_person_consolidation_reads_the_bounded_prefix(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    extract = consolidate.extract_statements

    def spy(utterance: Utterance, index: AliasIndex) -> Any:
        seen.append(utterance.text)
        return extract(utterance, index)

    monkeypatch.setattr(consolidate, "extract_statements", spy)
    persons = PersonMemory(memory.db, lambda: PersonsConfig(use_llm=False))
    persons.attach(memory)
    await memory.record_many([make_message(1, text="我住在杭州"), make_message(2, sender="u2", text=LONG)])
    report = await persons.consolidator.run(T0)
    assert seen == ["我住在杭州", analysed(LONG)]
    assert report.facts_added >= 1


async def test_record_time_analyses_read_the_bounded_prefix(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, int]] = []
    declarations, stated = observe.extract_declarations, preferences.extract_preferences

    def spy_names(utterance: Utterance) -> Any:
        seen.append(("names", len(utterance.text)))
        return declarations(utterance)

    def spy_preferences(text: str) -> Any:
        seen.append(("preferences", len(text)))
        return stated(text)

    monkeypatch.setattr(observe, "extract_declarations", spy_names)
    monkeypatch.setattr(preferences, "extract_preferences", spy_preferences)
    PersonMemory(memory.db, lambda: PersonsConfig(use_llm=False)).attach(memory)
    attach_recall(memory)
    naming = "叫我小胖吧。" + LONG  # words that may name someone, or names are not read at all
    await memory.record(make_message(1, text=naming))
    assert seen == [("names", ANALYSED_CHARS), ("preferences", ANALYSED_CHARS)]
    assert await _stored_text(memory, "m1") == naming


async def test_topic_check_splits_the_bounded_prefix(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    split = check.split_threads

    def spy(disentangler: Any, batch: Sequence[Any]) -> Any:
        seen.extend(m.text for m in batch)
        return split(disentangler, batch)

    monkeypatch.setattr(check, "split_threads", spy)
    messages = chain(1, 5, "周末去九溪爬山")
    messages[-1] = replace(messages[-1], text=messages[-1].text + LONG)
    await memory.record_many(messages)
    report = await TopicCheck(memory.db, SMALL).run_chat(1, T0 + timedelta(minutes=5))
    assert report.batches == 1
    assert seen[:-1] == [m.text for m in messages[:-1]]
    assert seen[-1] == analysed(messages[-1].text)


async def test_a_cancelled_consolidation_stops_after_the_run_in_hand(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offload, "RUN_CHARS", 1)  # one message a run
    started, release, finished = threading.Event(), threading.Event(), threading.Event()
    read: list[str] = []
    extract = consolidate.extract_statements

    def held(utterance: Utterance, index: AliasIndex) -> Any:
        read.append(utterance.text)
        started.set()
        release.wait()
        try:
            return extract(utterance, index)
        finally:
            finished.set()

    monkeypatch.setattr(consolidate, "extract_statements", held)
    persons = PersonMemory(memory.db, lambda: PersonsConfig(use_llm=False))
    persons.attach(memory)
    await memory.record_many(make_message(n, sender=f"u{n}", text=f"我住在杭州{n}") for n in range(1, 4))
    job = asyncio.create_task(persons.consolidator.run(T0))
    await asyncio.to_thread(started.wait)
    job.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await job
    await asyncio.to_thread(finished.wait)
    assert read == ["我住在杭州1"]


async def test_every_word_of_a_long_message_is_searchable(memory: MemoryService) -> None:
    # The full-text index covers the whole message, not its first 20,000 characters.
    long = LONG + "我们在斑马湖边看到了独角兽"
    assert len(long) > 30_000
    attach_recall(memory)
    await memory.record_many([make_message(1, text=long), make_message(2, sender="u2", text="好的")])
    hits = await memory.recall(RecallQuery("独角兽", (1,), T0 + timedelta(minutes=1)))
    assert [(hit.kind, hit.text) for hit in hits if "lexical" in hit.found_by] == [("message", long)]
