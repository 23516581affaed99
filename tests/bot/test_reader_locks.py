"""Reading commands that write after all hold the data directory as writers do, so that `qunyi compact`
and they exclude each other: a recall whose rerank asks the model (its token usage is a row), and a
reader opening a database whose schema it must upgrade. Real SQLite, real flocks, the fake
OpenAI-compatible server on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bot.cli.main import cli
from bot.pid_file import COMPACT, hold
from bot.writers import MARKER_PREFIX, excluding_writers
from memory.storage import migrate
from tests.bot.test_cli_database import READ_ONLY, invoke, no_traceback, old_database
from tests.fakes.openai_server import FakeOpenAI, Hold, answer_json
from tests.waiting import WAIT, wait_until

LINES = [
    {"chat": "g1", "message_id": "m1", "sender_id": "u1", "sender_name": "阿红", "time": 1772367300,
     "text": "周六去九溪徒步吧"},
    {"chat": "g1", "message_id": "m2", "sender_id": "u2", "sender_name": "Lily", "time": 1772367360,
     "text": "九溪徒步记得带水 bring water"},
]  # fmt: skip
# Every reading command that opens (and so may upgrade) the database: not the dry runs, which refuse an
# old schema, nor `embeddings prune`, a writer.
REPO = Path(__file__).resolve().parents[2]
READERS = [args for args in READ_ONLY if "--dry-run" not in args and args[:2] != ["embeddings", "prune"]]


def qunyi(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "250"})


@contextmanager
def compacting(data: Path) -> Iterator[None]:
    """What `qunyi compact` holds while it rewrites the database: its pid file and the data directory."""
    with hold(data, COMPACT), excluding_writers(data):
        yield


def compact_refusal(data: Path) -> str:
    return f"`qunyi compact` (pid {os.getpid()}) is rewriting the database in {data}; try again when it ends"


def usage_rows(data: Path) -> list[tuple[str, int, int]]:
    with sqlite3.connect(data / "qunyi.db") as db:
        return list(db.execute("SELECT task, ok, cancelled FROM llm_usage ORDER BY id"))


def rerank_config(tmp_path: Path, base_url: str) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[recall]\nrerank = true\n\n[llm]\nenabled = true\nbase_url = "{base_url}"\nmodel = "fake"\n'
        "max_retries = 0\n",
        encoding="utf-8",
    )
    return config


def replayed(tmp_path: Path) -> Path:
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in LINES) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    result = qunyi("replay", log, "--data-dir", data, "--no-progress")
    assert result.exit_code == 0, result.output
    return data


def marker_appears(data: Path) -> None:
    wait_until(lambda: any(data.glob(f"{MARKER_PREFIX}*")), "a writer marker appeared")


async def test_a_recall_that_asks_the_model_is_refused_while_compact_runs(tmp_path: Path) -> None:
    """It would write its usage row into the database compact is rewriting."""
    data = await asyncio.to_thread(replayed, tmp_path)
    async with FakeOpenAI() as server:
        config = rerank_config(tmp_path, server.base_url)
        with compacting(data):
            result = await asyncio.to_thread(
                qunyi, "recall", "九溪", "--chat", "replay:g1", "--data-dir", data, "--config", config
            )
        assert result.exit_code == 1 and no_traceback(result), result.output
        assert compact_refusal(data) in result.output
        assert server.chat_requests == []
    assert usage_rows(data) == []


async def test_compact_is_refused_while_a_recall_awaits_its_rerank_and_the_usage_is_kept(
    tmp_path: Path,
) -> None:
    data = await asyncio.to_thread(replayed, tmp_path)
    async with FakeOpenAI() as server:
        held = Hold(answer_json({"order": [2, 1]}))  # until compact has been refused
        server.script(held)
        config = rerank_config(tmp_path, server.base_url)
        recall = asyncio.create_task(
            asyncio.to_thread(
                qunyi, "recall", "九溪", "--chat", "replay:g1", "--data-dir", data, "--config", config
            )
        )
        await asyncio.wait_for(held.reached.wait(), WAIT)
        await asyncio.to_thread(marker_appears, data)
        compact = await asyncio.to_thread(qunyi, "compact", "--data-dir", data)
        held.release.set()
        recalled = await recall
        assert len(server.chat_requests) == 1
    assert recalled.exit_code == 0, recalled.output
    assert compact.exit_code == 1 and no_traceback(compact), compact.output
    assert f"`qunyi recall` (pid {os.getpid()}) is writing to the database in {data}" in compact.output
    assert usage_rows(data) == [("reply", 1, 0)]
    assert not list(data.glob(f"{MARKER_PREFIX}*"))


def test_a_recall_without_rerank_still_reads_while_compact_runs(tmp_path: Path) -> None:
    data = replayed(tmp_path)
    with compacting(data):
        result = qunyi("recall", "九溪", "--chat", "replay:g1", "--data-dir", data)
    assert result.exit_code == 0, result.output
    assert "九溪" in result.output


@pytest.mark.parametrize("args", READERS, ids=" ".join)
def test_a_reader_upgrades_an_older_schema_only_while_compact_does_not_run(
    args: list[str], tmp_path: Path
) -> None:
    data = tmp_path / "d"
    database = old_database(data)
    before = database.read_bytes()
    with compacting(data):
        refused = invoke(args, data, tmp_path)
    assert refused.exit_code == 1 and no_traceback(refused), refused.output
    assert compact_refusal(data) in " ".join(refused.output.split())
    assert database.read_bytes() == before
    with pytest.raises(migrate.SchemaBehind):
        migrate.check(database)
    invoke(args, data, tmp_path)
    migrate.check(database)  # upgraded: raises nothing
    assert not list(data.glob(f"{MARKER_PREFIX}*"))


def test_a_reader_on_a_current_schema_is_not_refused_while_compact_runs(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    migrate.upgrade(data / "qunyi.db")
    with compacting(data):
        result = invoke(["jargon", "list"], data, tmp_path)
    assert result.exit_code == 0, result.output


async def test_sigterm_while_the_rerank_is_awaited_still_writes_its_usage(tmp_path: Path) -> None:
    """SIGTERM (a service manager, a script's timeout) ends `qunyi recall` as Ctrl-C does: the app
    closes and the cancelled request's usage row, held in memory, is written; it ends as terminated,
    with 143 and a line saying so (it said "stopped by Ctrl-C" and exited 130)."""
    data = await asyncio.to_thread(replayed, tmp_path)
    async with FakeOpenAI() as server:
        held = Hold(answer_json({"order": [2, 1]}))
        server.script(held)
        config = rerank_config(tmp_path, server.base_url)
        args = ["recall", "九溪", "--chat", "replay:g1", "--data-dir", str(data), "--config", str(config)]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli.main",
            *args,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            await asyncio.wait_for(held.reached.wait(), 60)
            process.send_signal(signal.SIGTERM)
            _out, err = await asyncio.wait_for(process.communicate(), 60)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            held.release.set()
    assert process.returncode != -signal.SIGTERM, "killed by the signal: nothing was closed"
    assert process.returncode == 143, err.decode()
    assert err.decode().splitlines()[-1] == "qunyi recall: terminated by SIGTERM", err.decode()
    assert b"Traceback" not in err, err.decode()
    assert usage_rows(data) == [("reply", 0, 1)]
    assert not list(data.glob(f"{MARKER_PREFIX}*"))
