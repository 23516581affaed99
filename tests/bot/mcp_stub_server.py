"""Test-only MCP server: the real registry over a NoteStore, with a fake MemoryTools backend.

Run as `python tests/bot/mcp_stub_server.py NOTES_DIR CHAT [--write]`.
"""

import asyncio
import sys
from pathlib import Path

from bot.mcp_server import serve_stdio
from bot.tools import ToolContext, build_registry
from memory.notes import NoteStore


class FakeMemory:
    """Answers from fixed text, echoing the chat and arguments so the test can check scoping."""

    async def recall(self, chat: str, query: str, limit: int) -> str:
        return f"[{chat}] recalled {limit} for {query}: 上周三大家约了火锅"

    async def person(self, chat: str, name: str) -> str:
        return f"[{chat}] {name}: 喜欢猫"

    async def jargon(self, chat: str, term: str) -> str:
        return f"[{chat}] {term}: 很厉害"


def main() -> None:
    notes_dir, chat = Path(sys.argv[1]), sys.argv[2]
    writable = "--write" in sys.argv
    ctx = ToolContext(chat=chat, notes=NoteStore(notes_dir), memory=FakeMemory(), writable=writable)
    asyncio.run(serve_stdio(build_registry(), ctx))


if __name__ == "__main__":
    main()
