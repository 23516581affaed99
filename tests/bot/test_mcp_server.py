"""An MCP client session over stdio lists the tools and calls recall and note_get."""

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client

from memory.notes import NoteStore

REPO = Path(__file__).resolve().parents[2]
STUB = Path(__file__).with_name("mcp_stub_server.py")
READ_TOOLS = {"recall", "person", "jargon", "note_get", "note_hints"}


def _params(notes_dir: Path, *extra: str) -> StdioServerParameters:
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return StdioServerParameters(
        command=sys.executable,
        args=[str(STUB), str(notes_dir), "g1", *extra],
        env={"PYTHONPATH": pythonpath},
        cwd=REPO,
    )


async def test_read_only_session_lists_tools_and_calls_them(tmp_path: Path) -> None:
    await NoteStore(tmp_path).set("规则", "不许刷屏 ![[群主]]")
    await NoteStore(tmp_path).set("群主", "小明")
    async with stdio_client(_params(tmp_path)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        assert {t.name for t in listed.tools} == READ_TOOLS
        assert all(t.annotations and t.annotations.read_only_hint for t in listed.tools)

        recalled = await session.call_tool("recall", {"query": "火锅", "limit": 2})
        assert not recalled.is_error
        assert recalled.content[0].text == "[g1] recalled 2 for 火锅: 上周三大家约了火锅"

        note = await session.call_tool("note_get", {"name": "规则", "depth": 1})
        assert note.content[0].text == "不许刷屏 ![[群主]]start\n\n小明\n\n![[群主]]end"

        refused = await session.call_tool("note_set", {"name": "x", "content": "y"})
        assert refused.is_error
        bad = await session.call_tool("note_get", {"name": "../../etc/passwd"})
        assert bad.is_error and "invalid note name" in bad.content[0].text
    assert await NoteStore(tmp_path).list() == ["群主", "规则"]


async def test_write_session_can_set_notes(tmp_path: Path) -> None:
    params = _params(tmp_path, "--write")
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        assert {"note_set", "note_rename"} <= {t.name for t in listed.tools}
        done = await session.call_tool("note_set", {"name": "火锅", "content": "周三 [[小明]]"})
        assert not done.is_error
        nul = await session.call_tool("note_set", {"name": "规则", "content": "不许\x00刷屏\n\t第二条"})
        assert not nul.is_error
    assert await NoteStore(tmp_path).get("火锅") == "周三 [[小明]]"
    assert await NoteStore(tmp_path).get("规则") == "不许刷屏\n\t第二条", "the NUL is dropped"
