"""`qunyi recall|who|what … --chat <chat> [--json]`: the group members' memory commands, for admins."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial
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
from bot.commands import answers
from memory.embeddings.local import LocalEmbedder
from memory.service import MemoryService

Handler = Callable[[MemoryService, int, str], Awaitable[answers.Answer]]
MODEL_LOAD_SECONDS = 300.0


def wait_for_local_model(memory: MemoryService) -> None:
    """Let a one-shot command's question wait for the `local` embedder's model to load. A running bot
    has it loaded by its backfill, and keeps its question timeout short for the reply's sake
    (`[recall] query_embed_timeout_seconds`); here loading the model would take all of it, and recall
    would never use the stored vectors."""
    recaller = memory.recaller
    if isinstance(recaller.embedder, LocalEmbedder):
        recaller.settings = replace(recaller.settings, query_embed_timeout_seconds=MODEL_LOAD_SECONDS)


def _make(name: str, handler: Handler, argument: str, help_text: str, recalls: bool = False) -> click.Command:
    @click.command(name, help=help_text)
    @click.argument(argument, nargs=-1, required=True)
    @click.option("--chat", "chat_key", required=True, help="Chat as platform:id, or its id alone.")
    @click.option("--json", "as_json", is_flag=True, help="Print the JSON answer.")
    @runtime_options
    @async_command
    async def command(
        chat_key: str,
        as_json: bool,
        config_path: Path | None,
        data_dir: Path | None,
        **words: tuple[str, ...],
    ) -> None:
        text = " ".join(words[argument]).strip()
        if not text:
            raise click.UsageError(f"{argument.upper()} is empty")
        with sigterm_as_ctrl_c():
            app = await open_app(
                open_config(config_path), data_dir, create=False, writes=False, recalls=recalls
            )
            try:
                chat = await find_chat(app.memory, chat_key, app.data_dir)
                if recalls:
                    wait_for_local_model(app.memory)
                answer = await handler(app.memory, chat.id, text)
            finally:
                await app.close()
        click.echo(json.dumps(answer.data, ensure_ascii=False, indent=2) if as_json else answer.text)

    return command


COMMANDS = [
    # An admin looking is not the group remembering: the CLI's recall counts nothing as recalled
    # again, so inspecting memory never changes what forgetting keeps.
    _make("recall", partial(answers.recall, reinforce_shown=False), "query", "Search a chat's memory.", True),
    _make("who", answers.who, "name", "Who a name refers to in a chat."),
    _make("what", answers.what, "term", "What a group term means."),
]
