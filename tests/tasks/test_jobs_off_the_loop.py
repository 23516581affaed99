"""The CPU-heavy steps of the jobs (seconds for a batch of long messages) run off the event loop's
thread, so that a reply is not held up while jargon is mined or topics are split."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from memory.jargon.discovery import Discoverer
from memory.service import MemoryService
from memory.topics import check
from memory.topics.check import TopicCheck
from tasks.jargon_mining import JargonMiningJob
from tests.conftest import T0, make_message
from tests.memory.topics.test_check import SMALL, chain
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
    for name in ("rebuild", "run"):
        monkeypatch.setattr(Discoverer, name, _recording(calls, name, getattr(Discoverer, name)))
    await memory.record_many(make_message(n, sender=f"u{n % 4}", text=t) for n, t in enumerate(LINES))
    report = await JargonMiningJob(memory.db, lambda: SETTINGS).run(T0)
    assert report.chats == 1
    assert calls == ["rebuild on a worker", "run on a worker"]


async def test_topic_threads_are_split_on_a_worker_thread(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(check, "split_threads", _recording(calls, "split", check.split_threads))
    await memory.record_many(chain(1, 5, "周末去九溪爬山"))
    report = await TopicCheck(memory.db, SMALL).run_chat(1, T0 + timedelta(minutes=5))
    assert report.batches == 1
    assert calls == ["split on a worker"]
