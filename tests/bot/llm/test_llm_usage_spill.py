"""LLM usage rows a refusing database could not take survive the process (bot.llm.usage_spill): kept on
disk, counted by the budgets of the next process, written into the database once each. Real SQLite."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.backup import back_up
from bot.llm import usage_spill
from bot.llm.settings import Budget
from bot.llm.usage import UsageLedger
from memory.clock import ManualClock
from memory.models import LlmUsage
from memory.storage.database import Database
from tests.bot.test_doctor import doctor
from tests.bot.test_run_cli import ROOT
from tests.conftest import database_locked

CAP = {"reply": Budget(tokens_per_hour=100)}


@pytest.fixture
async def quick_db(tmp_path: Path) -> AsyncIterator[Database]:
    """A database that gives up on a lock after 100 ms, so a locked write fails fast."""
    database = await Database.open(tmp_path / "data", busy_timeout_ms=100)
    yield database
    await database.close()


async def tokens(db: Database) -> list[tuple[int, int]]:
    async with db.read() as session:
        rows = (await session.execute(select(LlmUsage).order_by(LlmUsage.id))).scalars()
        return [(row.prompt_tokens, row.completion_tokens) for row in rows]


async def refused(db: Database, clock: ManualClock) -> UsageLedger:
    """A ledger whose two rows the locked database refused, as a process that is then killed leaves it
    (never closed)."""
    ledger = UsageLedger(db, clock, CAP)
    with database_locked(db.path):
        await ledger.record("reply", "m", 40, 10, ok=True)
        await ledger.record("reply", "m", 30, 5, ok=True)
    return ledger


async def test_rows_the_database_refused_survive_a_kill_and_are_counted_and_written_once(
    quick_db: Database, clock: ManualClock
) -> None:
    """They were held in memory only: a process killed then lost them, and the budgets of the next one
    under-counted."""
    await refused(quick_db, clock)  # killed: no close
    since = clock.now() - timedelta(hours=1)
    restarted = UsageLedger(quick_db, clock, CAP)
    assert await restarted.used("reply", since) == 85, "counted before they are written"
    assert await restarted.over_budget("reply", in_flight=20) == (
        "reply: 85 tokens in the last hour and 20 reserved by requests in flight, cap 100"
    )
    assert await restarted.write_held() is True
    assert await tokens(quick_db) == [(40, 10), (30, 5)]
    assert await restarted.used("reply", since) == 85, "written, counted once"
    assert not (quick_db.path.parent / usage_spill.FILE_NAME).exists()
    await restarted.record("reply", "m", 1, 1, ok=True)
    await restarted.close()
    assert await tokens(quick_db) == [(40, 10), (30, 5), (1, 1)]


async def test_held_rows_go_with_the_next_write_that_gets_through_and_a_reader_never_writes_them(
    quick_db: Database, clock: ManualClock
) -> None:
    ledger = await refused(quick_db, clock)
    reader = UsageLedger(quick_db, clock, CAP)  # a command that only reads (`qunyi doctor`)
    assert (await reader.summary())["reply"]["calls"] == 2
    await reader.close()
    assert await tokens(quick_db) == []
    await ledger.record("reply", "m", 2, 2, ok=True)
    assert await tokens(quick_db) == [(40, 10), (30, 5), (2, 2)], "in the order they came"
    assert (await ledger.summary())["reply"]["calls"] == 3


async def test_a_kill_between_the_commit_and_the_files_removal_writes_nothing_twice(
    quick_db: Database, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    await refused(quick_db, clock)
    with monkeypatch.context() as patch:
        patch.setattr(usage_spill, "_done_with", lambda path, bad: None)  # killed right after the commit
        assert await usage_spill.write_held(quick_db, quick_db.path.parent) == 2
    left = list(quick_db.path.parent.glob(usage_spill.WRITING))
    assert left, "the files are still there, their names noted as written"
    restarted = UsageLedger(quick_db, clock, CAP)
    assert await restarted.write_held() is True
    assert await tokens(quick_db) == [(40, 10), (30, 5)]
    assert not any(path.exists() for path in left)
    assert await restarted.used("reply", clock.now() - timedelta(hours=1)) == 85


async def test_a_corrupt_file_is_kept_aside_with_a_warning_and_its_good_rows_written(
    quick_db: Database, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    good = {
        "task": "reply",
        "model": "模型",
        "prompt_tokens": 9,
        "completion_tokens": 1,
        "ok": True,
        "error": "",
        "time": clock.now().timestamp(),
        "cancelled": False,
    }
    lines = [
        json.dumps(good),
        '{"task": "reply", "prompt_to',
        json.dumps({**good, "prompt_tokens": -1}),
        "[" * 100_000,
    ]
    data_dir = quick_db.path.parent
    (data_dir / usage_spill.FILE_NAME).write_bytes(("\n".join(lines) + "\n").encode() + b"\xff\xfe\n")
    ledger = UsageLedger(quick_db, clock, CAP)
    assert await ledger.used("reply", clock.now() - timedelta(hours=1)) == 10
    with caplog.at_level(logging.WARNING, "bot.llm.usage_spill"):
        assert await ledger.write_held() is True
    assert "line 2 is no LLM usage row" in caplog.text and "line 3 is no LLM usage row" in caplog.text
    assert "line 4 is no LLM usage row" in caplog.text and "line 5 is no LLM usage row" in caplog.text
    assert "kept aside as" in caplog.text
    assert await tokens(quick_db) == [(9, 1)]
    (aside,) = data_dir.glob("llm_usage_held.*.corrupt")
    assert "prompt_to" in aside.read_text(encoding="utf-8", errors="replace")
    assert await ledger.write_held() is True and await tokens(quick_db) == [(9, 1)]
    assert await ledger.used("reply", clock.now() - timedelta(hours=1)) == 10


KILLED = """
import asyncio, sys
from pathlib import Path
from bot.llm.usage import UsageLedger
from memory.clock import SystemClock
from memory.storage.database import Database

async def main() -> None:
    db = await Database.open(Path(sys.argv[1]), busy_timeout_ms=100)
    ledger = UsageLedger(db, SystemClock())
    await ledger.record("reply", "m", 40, 10, ok=True)  # the test holds the database: refused
    print("recorded", flush=True)
    sys.stdin.readline()  # killed here

asyncio.run(main())
"""


async def test_a_process_killed_with_rows_the_database_refused_leaves_them_to_the_next(
    quick_db: Database, clock: ManualClock
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with database_locked(quick_db.path):
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            KILLED,
            str(quick_db.path.parent),
            stdin=PIPE,
            stdout=PIPE,
            env=env,
            cwd=ROOT,
        )
        try:
            assert child.stdout is not None
            said = await asyncio.wait_for(child.stdout.readline(), 60)  # its warning goes to stderr
            assert said == b"recorded\n", said
        finally:
            child.kill()
            await child.wait()
    assert child.returncode == -signal.SIGKILL
    restarted = UsageLedger(quick_db, clock)
    assert await restarted.write_held() is True
    assert await tokens(quick_db) == [(40, 10)]


async def test_an_error_text_holding_a_lone_surrogate_is_kept_and_read_back(
    quick_db: Database, clock: ManualClock
) -> None:
    ledger = UsageLedger(quick_db, clock, CAP)
    with database_locked(quick_db.path):
        await ledger.record("reply", "模型", 3, 0, ok=False, error="坏了 \ud800")
    assert [(row.model, row.error) for row in usage_spill.held_rows(quick_db.path.parent)] == [
        ("模型", "坏了 \ud800")
    ]


async def test_held_rows_a_refused_write_left_renamed_go_into_a_backup_too(
    quick_db: Database, clock: ManualClock, tmp_path: Path
) -> None:
    """A second row refused while the database stays locked first tries the held ones: their file is
    renamed `.writing` and stays so. `qunyi backup` copied `llm_usage_held.jsonl` alone, so a backup
    taken then lost the first row, and doctor named a file that held only the second."""
    await refused(quick_db, clock)
    data = quick_db.path.parent
    renamed = list(data.glob(usage_spill.WRITING))
    assert renamed and (data / usage_spill.FILE_NAME).exists()
    said = await asyncio.to_thread(doctor, data)
    assert f"2 in {renamed[0]}, {data / usage_spill.FILE_NAME}" in said.output, said.output
    copy = tmp_path / "copy"
    await asyncio.to_thread(back_up, data, copy)
    restored = await Database.open(copy)
    try:
        assert await UsageLedger(restored, clock, CAP).write_held() is True
        assert await tokens(restored) == [(40, 10), (30, 5)]
    finally:
        await restored.close()
