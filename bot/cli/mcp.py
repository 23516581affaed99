"""`qunyi mcp --chat <id> [--write]`: one chat's memory tools over MCP on stdio."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable
from pathlib import Path

import click

from bot.cli.options import (
    async_command,
    find_chat,
    open_app,
    open_config,
    runtime_options,
    sigterm_as_ctrl_c,
)
from bot.tools import ToolContext, build_registry
from bot.tools.service_backend import ServiceMemoryTools


@click.command("mcp")
@click.option("--chat", "chat_key", required=True, help="Chat as platform:id (e.g. replay:g1).")
@click.option(
    "--write",
    is_flag=True,
    help="Also offer the note-writing tools, and let recall count what it shows as recalled again "
    "(by default nothing is written).",
)
@runtime_options
@async_command
async def mcp_command(chat_key: str, write: bool, config_path: Path | None, data_dir: Path | None) -> None:
    """Serve a chat's memory (recall, person, jargon, notes) to MCP clients over stdio."""
    try:
        from bot.mcp_server import serve_stdio
    except ImportError as exc:
        raise click.ClickException(
            f"the MCP server needs the 'mcp' extra: pip install 'qunyi[mcp]' ({exc})"
        ) from None
    config = open_config(config_path)
    logging.getLogger().handlers[:] = [logging.StreamHandler(sys.stderr)]
    with sigterm_as_ctrl_c():
        app = await open_app(config, data_dir, create=False, writes=write, recalls=True)
        try:
            chat = await find_chat(app.memory, chat_key, app.data_dir)
            assert app.memory.notes is not None  # build_app always gives the memory its notes
            key = chat.key
            ctx = ToolContext(
                chat=key,
                notes=app.memory.notes.for_chat(key),
                memory=ServiceMemoryTools(app.memory, reinforce=write),
                writable=write,
            )
            await until_ctrl_c(serve_stdio(build_registry(app.settings.tools.call_time_limit_seconds), ctx))
        finally:
            await app.close()


async def until_ctrl_c(serving: Awaitable[None]) -> None:
    """Await `serving`; Ctrl-C (or SIGTERM, which an MCP client sends to stop its server) ends it as
    the client closing stdin does, and the command then exits with 0 once the app is closed (its LLM
    usage written). A second Ctrl-C while closing still interrupts."""
    try:
        await serving
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is None or task.uncancel() > 0:
            raise


COMMANDS = [mcp_command]
