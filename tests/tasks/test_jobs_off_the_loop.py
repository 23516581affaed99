"""The CPU-heavy steps of the jobs (seconds for a batch of long messages) run off the event loop's
thread, so that a reply is not held up while jargon is mined, topics are split, placed and packed, or
people's facts are read; recording a long message tokenizes it off the loop too (a short one inline)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from memory import offload
from memory.history import digest
from memory.jargon import discovery
from memory.jargon.discovery import Discoverer
from memory.persons import consolidate, observe
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.recall import preferences
from memory.recall.setup import attach_recall
from memory.service import MemoryService
from memory.storage import fts
from memory.topics import check
from memory.topics.check import TopicCheck
from memory.types import MessageDeletion
from tasks.jargon_mining import JargonMiningJob
from tests.conftest import T0, make_message
from tests.memory.topics.test_check import LLM_SETTINGS, SMALL, FakeLLM, chain
from tests.tasks.test_jargon_mining import LINES, SETTINGS


def _recording(calls: list[str], name: str, step: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        calls.append(
            f"{name} on {'the loop' if threading.current_thread() is threading.main_thread() else 'a worker'}"
        )
        return step(*args, **kwargs)

    return run


async def test_jargon_discovery_runs_on_a_worker_thread(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(Discoverer, "observe", _recording(calls, "observe", Discoverer.observe))
    for name, step in (("spans", "_spans_of"), ("scores", "_passing"), ("evidence", "_with_evidence")):
        monkeypatch.setattr(discovery, step, _recording(calls, name, getattr(discovery, step)))
    await memory.record_many(make_message(n, sender=f"u{n % 4}", text=t) for n, t in enumerate(LINES))
    report = await JargonMiningJob(memory.db, lambda: SETTINGS).run(T0)
    assert report.chats == 1
    # The window is counted (there is no history before it), then its candidates are found.
    assert calls == [f"{step} on a worker" for step in ("observe", "spans", "scores", "evidence")]


async def test_topic_threads_are_split_on_a_worker_thread(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(check, "split_threads", _recording(calls, "split", check.split_threads))
    await memory.record_many(chain(1, 5, "周末去九溪爬山"))
    report = await TopicCheck(memory.db, SMALL).run_chat(1, T0 + timedelta(minutes=5))
    assert report.batches == 1
    assert calls == ["split on a worker"]


async def test_topics_are_placed_offline_on_a_worker_thread(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(check, "place_offline", _recording(calls, "place", check.place_offline))
    await memory.record_many(chain(1, 5, "周末去九溪爬山"))
    report = await TopicCheck(memory.db, SMALL).run_chat(1, T0 + timedelta(minutes=5))
    assert report.path == ["count:offline"]
    assert calls == ["place on a worker"]


async def test_topics_the_model_named_are_placed_on_a_worker_thread(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(check, "place_llm", _recording(calls, "place", check.place_llm))
    await memory.record_many(chain(1, 6, "周末去九溪爬山"))
    llm = FakeLLM(lambda _task, _m: {"topics": [{"topic": "爬山", "message_ids": [1, 2, 3, 4, 5, 6]}]})
    report = await TopicCheck(memory.db, LLM_SETTINGS, llm).run_chat(1, T0 + timedelta(hours=1))
    assert report.path == ["count:llm"]
    assert calls == ["place on a worker"]


async def test_a_topic_is_digested_on_a_worker_thread_and_rebuilt_there_after_a_deletion(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(digest, "_terms_named", _recording(calls, "terms", digest._terms_named))
    monkeypatch.setattr(digest, "offline_digest", _recording(calls, "digest", digest.offline_digest))
    await memory.record_many(chain(1, 5, "周末去九溪爬山"))
    topics = TopicCheck(memory.db, SMALL)
    await topics.run_chat(1, T0 + timedelta(minutes=5))
    calls.clear()  # the placement's terms
    [packed] = await topics.pack_ready(1, T0 + timedelta(minutes=6), everything=True)
    assert packed.history_id is not None
    assert await memory.delete(MessageDeletion("test", "g1", "m2"))
    # packed, then rebuilt: the terms found (in runs), then weighed
    assert calls == ["terms on a worker", "digest on a worker"] * 2


async def test_person_statements_are_read_on_a_worker_thread(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    for name in ("own_text", "extract_statements"):
        monkeypatch.setattr(consolidate, name, _recording(calls, name, getattr(consolidate, name)))
    persons = PersonMemory(memory.db, lambda: PersonsConfig(use_llm=False))
    persons.attach(memory)
    await memory.record_many(
        [make_message(1, text="我住在杭州"), make_message(2, sender="u2", text="我喜欢猫")]
    )
    report = await persons.consolidator.run(T0)
    assert report.facts_added == 2
    assert set(calls) == {"own_text on a worker", "extract_statements on a worker"}


async def test_a_long_message_is_analysed_on_a_worker_thread_and_a_short_one_inline(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(fts, "index_text", _recording(calls, "index", fts.index_text))
    monkeypatch.setattr(
        observe, "extract_declarations", _recording(calls, "names", observe.extract_declarations)
    )
    monkeypatch.setattr(
        preferences, "extract_preferences", _recording(calls, "preferences", preferences.extract_preferences)
    )
    PersonMemory(memory.db, lambda: PersonsConfig(use_llm=False)).attach(memory)
    attach_recall(memory)
    short = "以后叫我小胖，我喜欢爬山"
    await memory.record(make_message(1, text=short))
    # the observers' work, the index of the short preference document ("喜欢: 爬山"), then, at the end
    # of the batch, the message's own
    assert calls == ["names on the loop", "preferences on the loop", "index on the loop", "index on the loop"]
    calls.clear()
    await memory.record(make_message(2, text=short + "。" + "周末去九溪爬山" * (offload.INLINE_CHARS // 7)))
    assert calls == ["names on a worker", "preferences on a worker", "index on the loop", "index on a worker"]
