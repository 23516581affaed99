"""`qunyi`: the entry point. Each command lives in its own module and is attached here."""

from __future__ import annotations

import importlib
from typing import Any

import click

COMMAND_MODULES: tuple[str, ...] = (
    "bot.cli.run",
    "bot.cli.memory_commands",
    "bot.cli.doctor",
    "bot.cli.notes",
    "bot.cli.mcp",
    "bot.cli.importing",
    "bot.cli.history",
    "bot.cli.people",
    "bot.cli.chats",
    "bot.cli.bench",
    "bot.cli.jargon",
    "bot.cli.web",
    "bot.cli.backup",
    "bot.cli.embeddings",
    "bot.cli.compact",
)
EVAL_MODULES: tuple[str, ...] = ("bot.cli.eval_disentangle", "bot.cli.eval_jargon", "bot.cli.eval_locomo")


class LazyGroup(click.Group):
    """A group whose commands are attached from `modules` on first use. Importing this module stays
    cheap, so a Ctrl-C while the commands load (seconds on a busy machine) meets click's own handler
    ("Aborted!") instead of a traceback."""

    def __init__(self, *args: Any, modules: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.modules = modules

    def _load(self) -> None:
        modules, self.modules = self.modules, ()
        for name in modules:
            for command in importlib.import_module(name).COMMANDS:
                self.add_command(command)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._load()
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, modules=COMMAND_MODULES, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="qunyi")
def cli() -> None:
    """Qunyi (群忆): memory for group-chat bots."""


@cli.group("eval", cls=LazyGroup, modules=EVAL_MODULES)
def eval_group() -> None:
    """Measure Qunyi on public evaluation data (development splits)."""


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
