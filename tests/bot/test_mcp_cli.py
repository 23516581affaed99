"""`qunyi mcp --chat` over stdio with the real memory service: list tools, call recall."""

import asyncio
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client

from bot.cli.main import cli
from memory.models import ChatHistory
from memory.service import MemoryService
from memory.storage import Database
from tests.memory.recall.conftest import add_history

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


async def test_read_only_mcp_recall_writes_nothing_and_write_mode_reinforces(tmp_path: Path) -> None:
    """Without --write nothing is written: a topic the recall shows is not counted as recalled again."""
    line = {"chat": "g1", "message_id": "m1", "sender_id": "u1", "sender_name": "阿红", "time": 1772367300}
    log = tmp_path / "log.jsonl"
    log.write_text(
        json.dumps(line | {"text": "周六去九溪徒步吧"}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    data = tmp_path / "data"
    args = ["replay", str(log), "--data-dir", str(data), "--no-progress", "--settle-minutes", "0"]
    result = await asyncio.to_thread(CliRunner().invoke, cli, args)
    assert result.exit_code == 0, result.output
    db = await Database.open(data, create=False)
    try:
        chat = await MemoryService(db).find_chat("replay:g1")
        assert chat is not None
        start = datetime(2026, 3, 1, tzinfo=UTC)
        async with db.write() as session:
            topic = await add_history(session, chat.id, "九溪徒步", "周六去九溪", start, start, [])

        async def count_after_recall(*extra: str) -> int:
            mcp_args = ["-m", "bot.cli.main", "mcp", "--chat", "replay:g1", "--data-dir", str(data), *extra]
            params = StdioServerParameters(
                command=sys.executable,
                args=mcp_args,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                cwd=tmp_path,
            )
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
