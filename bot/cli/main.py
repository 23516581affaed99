"""`qunyi`: the entry point. Each command lives in its own module and is attached here."""

from __future__ import annotations

import importlib

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
    "bot.cli.bench",
    "bot.cli.jargon",
    "bot.cli.web",
)
EVAL_MODULES: tuple[str, ...] = ("bot.cli.eval_disentangle", "bot.cli.eval_jargon", "bot.cli.eval_locomo")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="qunyi")
def cli() -> None:
    """Qunyi (群忆): memory for group-chat bots."""


@cli.group("eval")
def eval_group() -> None:
    """Measure Qunyi on public evaluation data (development splits)."""


def _attach(group: click.Group, modules: tuple[str, ...]) -> None:
    for name in modules:
        module = importlib.import_module(name)
        for command in module.COMMANDS:
            group.add_command(command)


_attach(cli, COMMAND_MODULES)
_attach(eval_group, EVAL_MODULES)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
