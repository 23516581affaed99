"""`qunyi mcp --chat` over stdio with the real memory service: list tools, call recall."""

import asyncio
import json
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client

from bot.cli.main import cli
from bot.writers import MARKER_PREFIX
from memory.models import ChatHistory
from memory.service import MemoryService
from memory.storage import Database
from tests.bot.test_reader_locks import replayed, rerank_config, usage_rows
from tests.conftest import database_locked
from tests.fakes.openai_server import FakeOpenAI, Hold, answer_json
from tests.memory.recall.conftest import add_history
from tests.waiting import WAIT

REPO = Path(__file__).resolve().parents[2]


async def test_qunyi_mcp_serves_recall_from_the_database(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    lines = [
        {
            "chat": "g1",
            "message_id": "m1",
            "sender_id": "u1",
            "sender_name": "阿红",
            "time": 1772367300,
            "text": "周六去九溪徒步吧",
        },
        {
            "chat": "g1",
            "message_id": "m2",
            "sender_id": "bot",
            "sender_name": "群忆",
            "time": 1772367360,
            "text": "好, 九溪徒步记得带水",
        },
        {
            "chat": "g2",
            "message_id": "m1",
            "sender_id": "u9",
            "sender_name": "安安",
            "time": 1772367300,
            "text": "九溪的秘密计划",
        },
    ]
    log.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    args = ["replay", str(log), "--data-dir", str(data), "--no-progress"]
    result = await asyncio.to_thread(CliRunner().invoke, cli, args)
    assert result.exit_code == 0, result.output
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "bot.cli.main", "mcp", "--chat", "replay:g1", "--data-dir", str(data)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert names == {"recall", "person", "jargon", "note_get", "note_hints"}
        recalled = await session.call_tool("recall", {"query": "九溪"})
        text = recalled.content[0].text
    assert not recalled.is_error
    assert "周六去九溪徒步吧" in text
    assert "秘密计划" not in text, "another chat's memory never leaks"
    marked = [line for line in text.splitlines() if ", you] " in line]
    assert len(marked) == 1 and marked[0].endswith(": 好, 九溪徒步记得带水"), (
        "the bot's own line is marked as such"
    )


async def _with_topic(tmp_path: Path, config: Path) -> tuple[Path, Database, int]:
    """A replayed data directory holding one ChatHistory topic (九溪徒步) in replay:g1, the database
    opened, and the topic's id."""
    line = {"chat": "g1", "message_id": "m1", "sender_id": "u1", "sender_name": "阿红", "time": 1772367300}
    log = tmp_path / "log.jsonl"
    log.write_text(
        json.dumps(line | {"text": "周六去九溪徒步吧"}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    data = tmp_path / "data"
    args = ["replay", str(log), "--data-dir", str(data), "--no-progress", "--settle-minutes", "0"]
    result = await asyncio.to_thread(CliRunner().invoke, cli, [*args, "--config", str(config)])
    assert result.exit_code == 0, result.output
    db = await Database.open(data, create=False)
    chat = await MemoryService(db).find_chat("replay:g1")
    assert chat is not None
    start = datetime(2026, 3, 1, tzinfo=UTC)
    async with db.write() as session:
        topic = await add_history(session, chat.id, "九溪徒步", "周六去九溪", start, start, [])
    return data, db, topic


def _mcp_params(data: Path, config: Path, *extra: str) -> StdioServerParameters:
    args = ["mcp", "--chat", "replay:g1", "--data-dir", str(data), "--config", str(config), *extra]
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "bot.cli.main", *args],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=data.parent,
    )


async def test_read_only_mcp_recall_writes_nothing_and_write_mode_reinforces(tmp_path: Path) -> None:
    """Without --write nothing is written: a topic the recall shows is not counted as recalled again."""
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    data, db, topic = await _with_topic(tmp_path, config)
    try:

        async def count_after_recall(*extra: str) -> int:
            params = _mcp_params(data, config, *extra)
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                recalled = await session.call_tool("recall", {"query": "九溪徒步"})
            assert not recalled.is_error and "九溪徒步" in recalled.content[0].text
            async with db.read() as reader:
                return int((await reader.get_one(ChatHistory, topic)).count)

        assert await count_after_recall() == 0
        assert await count_after_recall("--write") == 1
    finally:
        await db.close()


async def test_a_write_call_meeting_a_locked_database_is_a_clear_tool_error_and_the_next_call_works(
    tmp_path: Path,
) -> None:
    """A recall under --write counts what it shows, a write: meeting another process's lock past the busy
    timeout it answered "recall failed" with a traceback in the log. It is now a tool error saying the
    database is locked and nothing was changed; the server goes on, and once the lock is gone the same
    call goes through."""
    config = tmp_path / "config.toml"
    config.write_text("[storage]\nbusy_timeout_ms = 300\n", encoding="utf-8")
    data, db, topic = await _with_topic(tmp_path, config)
    try:
        params = _mcp_params(data, config, "--write")
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            with database_locked(data / "qunyi.db"):
                refused = await session.call_tool("recall", {"query": "九溪徒步"})
            assert refused.is_error
            said = refused.content[0].text
            assert said.startswith(f"error: database {data / 'qunyi.db'} stayed locked for over 300 ms"), said
            assert said.endswith("nothing was changed: try again"), said
            async with db.read() as reader:
                assert (await reader.get_one(ChatHistory, topic)).count == 0, "nothing half-written"
            recalled = await session.call_tool("recall", {"query": "九溪徒步"})
            assert not recalled.is_error and "九溪徒步" in recalled.content[0].text
        async with db.read() as reader:
            assert (await reader.get_one(ChatHistory, topic)).count == 1
    finally:
        await db.close()


async def test_a_busy_timeout_longer_than_the_call_time_limit_still_answers_the_lock(tmp_path: Path) -> None:
    """With `busy_timeout_ms` (8 s) longer than `call_time_limit_seconds` (4 s), the call was cancelled
    while its write still waited and answered "recall took longer than 4s"; the write now gives up before
    the call's limit, and the answer is the lock's."""
    config = tmp_path / "config.toml"
    config.write_text("[storage]\nbusy_timeout_ms = 8000\n[tools]\ncall_time_limit_seconds = 4.0\n", "utf-8")
    data, db, topic = await _with_topic(tmp_path, config)
    try:
        params = _mcp_params(data, config, "--write")
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            # loads the tokenizer first: on a loaded machine that alone may outlast the 4 s, so asked again
            for _ in range(5):
                warm = await session.call_tool("recall", {"query": "九溪徒步"})
                if not (warm.is_error and "took longer" in warm.content[0].text):
                    break
            assert not warm.is_error, warm.content
            async with db.read() as reader:
                counted = (await reader.get_one(ChatHistory, topic)).count
            with database_locked(data / "qunyi.db"):
                refused = await session.call_tool("recall", {"query": "九溪徒步"})
            said = refused.content[0].text
            assert refused.is_error and "took longer" not in said, said
            assert said.startswith(f"error: database {data / 'qunyi.db'} stayed locked for over "), said
            assert said.endswith("nothing was changed: try again"), said
        async with db.read() as reader:
            assert (await reader.get_one(ChatHistory, topic)).count == counted >= 1, "the refused one counted"
    finally:
        await db.close()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def recall_request(request_id: int, query: str) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": query}},
    }


def wire(*messages: dict[str, object]) -> bytes:
    """JSON-RPC messages as the stdio transport frames them: one per line."""
    return b"".join(json.dumps(m, ensure_ascii=False).encode() + b"\n" for m in messages)


async def start_mcp(
    data: Path, *extra: str, stdin: Any = asyncio.subprocess.PIPE
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",
        "mcp",
        "--chat",
        "replay:g1",
        "--data-dir",
        str(data),
        *extra,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def answer_to(process: asyncio.subprocess.Process, request_id: int) -> dict[str, Any]:
    """The next message the server writes, which must answer `request_id`."""
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    answer = json.loads(line)
    assert answer.get("id") == request_id, answer
    return dict(answer)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_ends_qunyi_mcp_while_its_client_keeps_stdin_open(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    """stdin is read on the event loop, not in a thread blocked in readline until the client closes it:
    the signal ends the server at once, a tool call under way is cancelled, the command exits 0, and
    the usage of the model requests (the cancelled one's held in memory) is written at close."""
    data = await asyncio.to_thread(replayed, tmp_path)
    async with FakeOpenAI() as server:
        held = Hold(answer_json({"order": [2, 1]}))
        server.script(answer_json({"order": [2, 1]}), held)
        config = rerank_config(tmp_path, server.base_url)
        process = await start_mcp(data, "--write", "--config", str(config))
        assert process.stdin is not None
        try:
            process.stdin.write(wire(INITIALIZE, INITIALIZED, recall_request(2, "九溪")))
            await process.stdin.drain()
            assert (await answer_to(process, 1))["result"]["serverInfo"]["name"] == "qunyi"
            recalled = (await answer_to(process, 2))["result"]
            assert not recalled["isError"] and "周六去九溪徒步吧" in recalled["content"][0]["text"]
            process.stdin.write(wire(recall_request(3, "九溪")))
            await process.stdin.drain()
            await asyncio.wait_for(held.reached.wait(), 60)
            process.send_signal(stop_signal)
            await asyncio.wait_for(process.wait(), WAIT)
            assert process.stdin.transport.get_write_buffer_size() == 0  # still open: no EOF was sent
            assert process.stderr is not None
            err = await process.stderr.read()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            held.release.set()
    assert process.returncode == 0, err.decode()
    assert b"Traceback" not in err and b"Aborted" not in err, err.decode()
    assert usage_rows(data) == [("reply", 1, 0), ("reply", 0, 1)]
    assert not list(data.glob(f"{MARKER_PREFIX}*")), "the hold on the data directory is let go"


async def test_qunyi_mcp_ends_with_0_when_its_client_closes_stdin(tmp_path: Path) -> None:
    """An invalid line is passed over as the library does; the requests around it are answered."""
    data = await asyncio.to_thread(replayed, tmp_path)
    lines = wire(INITIALIZE, INITIALIZED) + b"not json\r\n" + wire(recall_request(2, "九溪"))
    recalled = (await answered_then_closed(data, lines))["result"]
    assert "周六去九溪徒步吧" in recalled["content"][0]["text"]


async def answered_then_closed(data: Path, lines: bytes) -> dict[str, Any]:
    """The answer to request 2 after `lines` (initialize, request 2) were sent; stdin is then closed and
    `qunyi mcp` must end with 0."""
    process = await start_mcp(data)
    assert process.stdin is not None and process.stderr is not None
    try:
        process.stdin.write(lines)
        await process.stdin.drain()
        await answer_to(process, 1)
        answer = await answer_to(process, 2)
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 60)
        err = await process.stderr.read()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()
    return answer


async def test_qunyi_mcp_reads_its_requests_from_a_file_on_stdin(tmp_path: Path) -> None:
    """A file is read to its end (it never waits for more), its last line needing no newline."""
    data = await asyncio.to_thread(replayed, tmp_path)
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(b"not json\n" + wire(INITIALIZE).rstrip(b"\n"))
    with requests.open("rb") as stdin:
        process = await start_mcp(data, stdin=stdin)
        out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    [answer] = [json.loads(line) for line in out.splitlines()]
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "qunyi", answer


async def test_a_request_escaping_a_lone_surrogate_is_answered(tmp_path: Path) -> None:
    """The library refused the whole line, so the client waited for an answer until it timed out."""
    data = await asyncio.to_thread(replayed, tmp_path)
    # json.dumps escapes the lone surrogate as \\ud800, as a client's JSON encoder does
    request = json.dumps(recall_request(2, "九溪\ud800")).encode() + b"\n"
    answer = await answered_then_closed(data, wire(INITIALIZE, INITIALIZED) + request)
    assert "周六去九溪徒步吧" in answer["result"]["content"][0]["text"], answer
