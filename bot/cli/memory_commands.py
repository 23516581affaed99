"""`qunyi recall|who|what … --chat <chat> [--json]`: the group members' memory commands, for admins."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import click

from bot.cli.options import async_command, find_chat, open_app, open_config, runtime_options
from bot.commands import answers
from memory.service import MemoryService

Handler = Callable[[MemoryService, int, str], Awaitable[answers.Answer]]


def _make(name: str, handler: Handler, argument: str, help_text: str) -> click.Command:
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
        app = await open_app(open_config(config_path), data_dir, create=False)
        try:
            chat = await find_chat(app.memory, chat_key, app.data_dir)
            answer = await handler(app.memory, chat.id, text)
        finally:
            await app.close()
        click.echo(json.dumps(answer.data, ensure_ascii=False, indent=2) if as_json else answer.text)

    return command


COMMANDS = [
    # An admin looking is not the group remembering: the CLI's recall counts nothing as recalled
    # again, so inspecting memory never changes what forgetting keeps.
    _make("recall", partial(answers.recall, reinforce_shown=False), "query", "Search a chat's memory."),
    _make("who", answers.who, "name", "Who a name refers to in a chat."),
    _make("what", answers.what, "term", "What a group term means."),
]
