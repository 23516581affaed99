"""`qunyi run` signalled with SIGTERM before its event loop's stop handling is set (the commands
loading, the database opening: the first seconds): it died with status 143 and no word."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

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


def test_sigterm_as_soon_as_the_run_starts_stops_it_cleanly(tmp_path: Path) -> None:
    config, data = tmp_path / "config.toml", tmp_path / "data"
    config.write_text('[logging]\nlevel = "INFO"\n', encoding="utf-8")
    bot = _start(data, config, subprocess.PIPE, ("-c", BOT))
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
    assert (data / "qunyi.db").exists()  # it started as far as it could, then stopped
    assert not (data / "qunyi.pid").exists()
