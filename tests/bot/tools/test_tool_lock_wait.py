"""A tool call whose write meets another process's lock reports the lock, not its own time limit, even
when `[storage] busy_timeout_ms` is longer than `[tools] call_time_limit_seconds`."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bot.tools import Tool, ToolContext, ToolRegistry, build_registry
from bot.tools.service_backend import ServiceMemoryTools
from memory.clock import ManualClock
from memory.models import ChatHistory
from memory.notes import NoteStore
from memory.service import MemoryService
from memory.storage import Database, DatabaseLocked
from memory.storage.lock_wait import writes_give_up_by
from tests.conftest import T0, database_locked, make_message
from tests.memory.recall.conftest import add_history

LOCKED = "error: database {path} stayed locked for over "
TRY_AGAIN = "; nothing was changed: try again"


async def _topic(memory: MemoryService) -> int:
    """A recorded message's chat with a ChatHistory topic (九溪徒步) in it; the topic's id."""
    await memory.record(make_message(1, text="周六去九溪徒步吧"))
    chat = await memory.chat("test", "g1")
    assert chat is not None
    async with memory.db.write() as session:
        return await add_history(session, chat.id, "九溪徒步", "周六去九溪", T0, T0, [])


async def _count(db: Database, topic: int) -> int:
    async with db.read() as session:
        return int((await session.get_one(ChatHistory, topic)).count)


@pytest.mark.parametrize("work_before", [0.0, 0.3], ids=["writes-at-once", "works-then-writes"])
async def test_a_counting_recall_under_a_lock_longer_than_its_time_limit_says_locked(
    tmp_path: Path, work_before: float
) -> None:
    """Busy timeout 5 s, call limit 0.8 s: the recall's count write gave up only after the call had been
    cancelled, which answered "recall took longer than 0.8s". The write now stops waiting before the
    limit, also when the handler spent part of it before writing, and the call answers the lock."""
    db = await Database.open(tmp_path / "data", busy_timeout_ms=5000)
    memory = MemoryService(db, ManualClock(T0))
    try:
        topic = await _topic(memory)
        # the first recall of a process loads the tokenizer's dictionary, longer than the limit
        warm = await ServiceMemoryTools(memory, reinforce=False).recall("test:g1", "九溪徒步", 5)
        assert "九溪徒步" in warm
        tools = ServiceMemoryTools(memory)
        recall = tools.recall

        async def slow_recall(chat: str, query: str, limit: int) -> str:
            await asyncio.sleep(work_before)  # e.g. an embedding or rerank request before the count
            return await recall(chat, query, limit)

        tools.recall = slow_recall  # type: ignore[method-assign]
        ctx = ToolContext("test:g1", NoteStore(tmp_path / "notes"), tools, writable=True)
        registry = build_registry(0.8)
        with database_locked(db.path):
            refused = await registry.call_checked("recall", {"query": "九溪徒步"}, ctx)
        assert not refused.ok
        assert refused.text.startswith(LOCKED.format(path=db.path)), refused.text
        assert refused.text.endswith(TRY_AGAIN), refused.text
        assert await _count(db, topic) == 0, "nothing half-written"
        answered = await registry.call_checked("recall", {"query": "九溪徒步"}, ctx)
        assert answered.ok and "九溪徒步" in answered.text, answered.text
        assert await _count(db, topic) == 1
    finally:
        await db.close()


class _NoArgs(BaseModel):
    pass


async def test_writes_after_a_tool_call_wait_the_whole_busy_timeout_again(tmp_path: Path) -> None:
    """The shorter wait is the tool call's only: the writer connection it shortened waits the whole
    `busy_timeout_ms` for the next write outside a call (SQLite giving up sooner would be reported as
    "refused after … ms", not "stayed locked for over 600 ms")."""
    db = await Database.open(tmp_path / "data", busy_timeout_ms=600)
    memory = MemoryService(db, ManualClock(T0))

    async def write(_ctx: ToolContext, _args: Any) -> str:
        await memory.record(make_message(2))
        return "written"

    try:
        await memory.record(make_message(1))
        registry = ToolRegistry([Tool("write", "records a message", _NoArgs, write, writes=True)], 0.4)
        ctx = ToolContext("test:g1", NoteStore(tmp_path / "notes"), writable=True)
        with database_locked(db.path):
            said = await registry.call("write", {}, ctx)
            assert said.startswith(LOCKED.format(path=db.path)) and said.endswith(TRY_AGAIN), said
            waited_ms = int(said.removeprefix(LOCKED.format(path=db.path)).split(" ")[0])
            assert 0 <= waited_ms < 600, said
            with pytest.raises(DatabaseLocked, match=r"stayed locked for over 600 ms$"):
                await memory.record(make_message(3))
        assert await registry.call("write", {}, ctx) == "written"
    finally:
        await db.close()


async def test_an_outer_deadline_that_comes_sooner_still_holds(tmp_path: Path) -> None:
    """A deadline set inside another keeps the sooner of the two, so a later one never lengthens it."""
    db = await Database.open(tmp_path / "data", busy_timeout_ms=5000)
    memory = MemoryService(db, ManualClock(T0))
    try:
        await memory.record(make_message(1))
        with database_locked(db.path), writes_give_up_by(time.monotonic() + 0.2):
            with writes_give_up_by(time.monotonic() + 60), pytest.raises(DatabaseLocked) as locked:
                await memory.record(make_message(2))
        waited_ms = int(str(locked.value).rsplit("over ", 1)[1].split(" ")[0])
        assert waited_ms <= 200, locked.value
    finally:
        await db.close()
