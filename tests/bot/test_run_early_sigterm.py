"""`qunyi run` signalled with SIGTERM before its event loop's stop handling is set (the commands
loading, the database opening: the first seconds): it died with status 143 and no word. Which
arguments run the bot is read before click (`bot.cli.main.command_named`)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import click
import pytest

from bot.cli.main import EXITING_OPTIONS, cli, command_named
from tests.bot.test_run_cli import _start

MARK = "SIGTERM is noted from here"
# `qunyi run` with one pause, right after main() starts noting SIGTERM: the test's signal lands there,
# before the commands are even imported, and the run carries on once told to.
BOT = f"""
import sys

import bot.early_stop as early

def noted_then_paused() -> None:
    note()
    print({MARK!r}, flush=True)
    sys.stdin.readline()

note, early.note_sigterm = early.note_sigterm, noted_then_paused
from bot.cli.main import main
main()
"""


# The same with the pause right after the database is opened (made, in a new data directory): a SIGTERM
# then is heeded once the event loop's handlers are set, before anything is served.
OPENED_BOT = f"""
import sys

import bot.cli.run as run

async def opened_then_paused(*args, **kwargs):
    app = await opened(*args, **kwargs)
    print({MARK!r}, flush=True)
    sys.stdin.readline()
    return app

opened, run.open_app = run.open_app, opened_then_paused
from bot.cli.main import main
main()
"""


def _sigterm_at_the_mark(tmp_path: Path, script: str, before: tuple[str, ...] = ()) -> Path:
    """`qunyi [BEFORE] run` through `script`, sent SIGTERM at its pause: its data directory, once it
    ended cleanly (status 0) saying why."""
    config, data = tmp_path / "config.toml", tmp_path / "data"
    config.write_text('[logging]\nlevel = "INFO"\n', encoding="utf-8")
    bot = _start(data, config, subprocess.PIPE, ("-c", script, *before))
    assert bot.stdin is not None and bot.stdout is not None
    try:
        first = bot.stdout.readline()
        assert first == f"{MARK}\n", first
        bot.send_signal(signal.SIGTERM)
        output, _ = bot.communicate("go on\n", timeout=120)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()
    assert bot.returncode == 0, output
    assert "stopped: SIGTERM came while the bot was starting" in output, output
    assert "Traceback" not in output and "Type to chat" not in output, output
    return data


@pytest.mark.parametrize("before", [(), ("--",)], ids=["run", "--, run"])
def test_sigterm_as_soon_as_the_run_starts_stops_it_cleanly_having_made_nothing(
    tmp_path: Path, before: tuple[str, ...]
) -> None:
    """It stopped only once the database was open: a new data directory was left with an empty database
    (and `qunyi -- run`, the command after the `--` that ends options, was not heeded at all)."""
    data = _sigterm_at_the_mark(tmp_path, BOT, before)
    assert not data.exists(), "nothing is made in a data directory the bot never served"


def test_sigterm_while_the_database_opens_stops_the_run_once_it_is_open(tmp_path: Path) -> None:
    data = _sigterm_at_the_mark(tmp_path, OPENED_BOT)
    assert (data / "qunyi.db").exists(), "the opening (a schema upgrade maybe) is not broken off"
    assert not (data / "qunyi.pid").exists()


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (["run", "--data-dir", "d"], "run"),
        (["--", "run"], "run"),
        (["--help", "run"], None),
        (["--version", "run"], None),
        (["-h"], None),
        (["--"], None),
        ([], None),
        (["doctor", "run"], "doctor"),
        (["--", "--help"], "--help"),
    ],
)
def test_the_command_is_read_from_the_arguments_as_click_reads_them(
    args: list[str], command: str | None
) -> None:
    assert command_named(args) == command


def test_every_option_of_qunyi_itself_exits_before_any_command() -> None:
    """`command_named` reads an option before the command as one that exits: a new option of `qunyi`
    itself (one that lets the command run, say `qunyi --data-dir D run`) must be taught to it."""
    ctx = click.Context(cli, **cli.context_settings)
    own = {name for param in cli.get_params(ctx) for name in (*param.opts, *param.secondary_opts)}
    assert own == EXITING_OPTIONS
