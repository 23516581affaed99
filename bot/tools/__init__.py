"""Tools for the reply model's function calling and the MCP server, scoped to one chat."""

from bot.tools.defaults import build_registry
from bot.tools.loop import ChatFn, ToolLoopResult, run_with_tools
from bot.tools.registry import MemoryTools, Tool, ToolContext, ToolOutcome, ToolRegistry
from bot.tools.tokens import TokenCount, count_tokens, tool_definition_tokens

__all__ = [
    "ChatFn",
    "MemoryTools",
    "TokenCount",
    "Tool",
    "ToolContext",
    "ToolLoopResult",
    "ToolOutcome",
    "ToolRegistry",
    "build_registry",
    "count_tokens",
    "run_with_tools",
    "tool_definition_tokens",
]
