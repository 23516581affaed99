"""The registry the bot and the MCP server use: memory look-ups plus notes."""

from __future__ import annotations

from bot.tools.memory_tools import MEMORY_TOOLS
from bot.tools.note_tools import NOTE_TOOLS
from bot.tools.registry import DEFAULT_TIME_LIMIT, ToolRegistry


def build_registry(time_limit: float = DEFAULT_TIME_LIMIT) -> ToolRegistry:
    """All seven tools: recall, person, jargon, note_get, note_set, note_rename, note_hints."""
    return ToolRegistry([*MEMORY_TOOLS, *NOTE_TOOLS], time_limit=time_limit)
