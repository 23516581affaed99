"""`qunyi`: the entry point. Each command lives in its own module and is attached here."""

from __future__ import annotations

import importlib
import os
import signal
import sys
from typing import Any

import click

from bot.early_stop import note_sigterm
from bot.termination import TERMINATED, terminate_as_interrupt, terminated

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


INTERRUPTED = 128 + signal.SIGINT
"""The exit code of a command stopped by Ctrl-C (130), as a shell gives a program SIGINT ended."""


class LazyGroup(click.Group):
    """A group whose commands are attached from `modules` on first use. Importing this module stays
    cheap, so a Ctrl-C while the commands load (seconds on a busy machine) meets `QunyiGroup`'s
    handler instead of a traceback."""

    def __init__(self, *args: Any, modules: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.modules = modules

    def _load(self) -> None:
        modules, self.modules = self.modules, ()
        for name in modules:
            for command in importlib.import_module(name).COMMANDS:
                self.add_command(command)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _refuse_undecodable(args)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._load()
        return super().get_command(ctx, cmd_name)


class QunyiGroup(LazyGroup):
    """`qunyi` itself: a Ctrl-C that reaches a command as KeyboardInterrupt (while the commands load,
    while `qunyi run` opens the database before its own stop handling is in place, in the middle of
    an import) ends it with one line saying so and exit code 130, instead of click's "Aborted!" and 1;
    a SIGTERM taken as one (`bot.termination`) with a line saying it was terminated and exit code
    143. Commands that stop on Ctrl-C by themselves (`qunyi run` once started, `mcp`, `web`) are not
    interrupted: they end as they always did."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGS] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            args = ctx.meta.get(_ARGS, [])
            if terminated():
                click.echo(terminated_message(args), err=True)
                ctx.exit(TERMINATED)
            click.echo(err=True)  # ends the line the terminal echoed "^C" on
            click.echo(interrupted_message(args), err=True)
            ctx.exit(INTERRUPTED)


_ARGS = "qunyi.args"


def interrupted_message(args: list[str]) -> str:
    """What `qunyi ARGS` says when Ctrl-C stops it."""
    name = command_named(args)
    if name == "run":  # once started, the bot stops on Ctrl-C by itself and never gets here
        return "qunyi run: stopped by Ctrl-C before the bot started"
    return f"qunyi {name}: stopped by Ctrl-C" if name else "qunyi: stopped by Ctrl-C"


def terminated_message(args: list[str]) -> str:
    """What `qunyi ARGS` says when a SIGTERM stops it."""
    name = command_named(args)
    return f"qunyi {name}: terminated by SIGTERM" if name else "qunyi: terminated by SIGTERM"


def _refuse_undecodable(args: list[str]) -> None:
    """Refuse an argument that is not UTF-8 (a terminal in GBK, say): Python hands it on holding lone
    surrogates, which no database, file or answer can hold, so every command used to fail with a
    traceback. An existing file's name is left alone: the file system takes it back as it came."""
    from memory.text.unicode import lone_surrogate_at

    for arg in args:
        if lone_surrogate_at(arg) is None:
            continue
        value = arg.partition("=")[2] if arg.startswith("--") and "=" in arg else arg
        if os.path.lexists(value):
            continue
        try:  # the bytes the terminal sent, as Python kept them
            shown = repr(arg.encode("utf-8", "surrogateescape"))
        except UnicodeEncodeError:  # a lone surrogate of another kind (a Windows command line)
            shown = ascii(arg)
        raise click.UsageError(
            f"the argument {shown} is not UTF-8 text: set the terminal to UTF-8 (e.g. LANG=C.UTF-8)"
        )


@click.group(
    cls=QunyiGroup, modules=COMMAND_MODULES, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(package_name="qunyi")
def cli() -> None:
    """Qunyi (群忆): memory for group-chat bots."""


@cli.group("eval", cls=LazyGroup, modules=EVAL_MODULES)
def eval_group() -> None:
    """Measure Qunyi on public evaluation data (development splits)."""


def main() -> None:
    """The `qunyi` command. `qunyi run` notes a SIGTERM from here on (the bot stops cleanly once
    started): loading the commands and opening the database take seconds in which it used to die.
    Any other command takes a SIGTERM as a Ctrl-C, and ends with 143 saying it was terminated."""
    if command_named(sys.argv[1:]) == "run":
        note_sigterm()
    else:
        terminate_as_interrupt()
    cli()


EXITING_OPTIONS = frozenset({"--version", "-h", "--help"})
"""`qunyi`'s own options (before the command): each prints and exits, no command runs."""


def command_named(args: list[str]) -> str | None:
    """The command `qunyi ARGS` runs, read before click (which loads the commands first): the first
    argument that is not an option, or the one after `--` (`qunyi -- run`); None when there is none or
    an option of `qunyi`'s own comes first (`qunyi --help run` runs nothing). However Python was
    started (`qunyi`, `python -m bot.cli.main`, `python -c …`), `sys.argv[1:]` are these arguments."""
    for at, arg in enumerate(args):
        if arg == "--":
            return args[at + 1] if at + 1 < len(args) else None
        # An option first is one of EXITING_OPTIONS, or one click refuses: no command runs.
        return None if arg.startswith("-") else arg
    return None


if __name__ == "__main__":
    main()
