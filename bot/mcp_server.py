"""Serve one chat's memory tools over MCP (stdio), for other agents and desktop assistants.

The server lists and runs the tools of a ToolRegistry under a fixed ToolContext (one chat). Unless
the context is writable, write tools are neither listed nor callable. Needs the `mcp` extra (mcp 2.x).
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server

from bot.mcp_stdio import stdio_streams
from bot.tools import ToolContext, ToolRegistry

SERVER_NAME = "qunyi"
INSTRUCTIONS = (
    "Memory of one group chat: recall past topics and messages, people and slang; "
    "notes are markdown linked with [[Name]] — start from note_hints."
)


def _version() -> str:
    try:
        return metadata.version("qunyi")
    except metadata.PackageNotFoundError:
        return "0"


def build_server(registry: ToolRegistry, ctx: ToolContext) -> Server[Any]:
    """An MCP server exposing `registry`'s tools for the chat in `ctx`."""
    tools = registry.tools(writable=ctx.writable)

    async def list_tools(
        _request: Any, _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.input_schema(),
                    annotations=types.ToolAnnotations(read_only_hint=not tool.writes),
                )
                for tool in tools
            ]
        )

    async def call_tool(_request: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        outcome = await registry.call_checked(params.name, params.arguments or {}, ctx)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.text)], is_error=not outcome.ok
        )

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(registry: ToolRegistry, ctx: ToolContext) -> None:
    """Serve the tools over this process's stdin/stdout until the client disconnects (or the task is
    cancelled: stdin is read on the loop, so that ends it at once)."""
    server = build_server(registry, ctx)
    async with stdio_streams() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
