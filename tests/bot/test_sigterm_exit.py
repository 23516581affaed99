"""SIGTERM stops a command as Ctrl-C does, with its cleanup, but ends it as terminated: exit code 143
and a line saying so (Ctrl-C: 130, "stopped by Ctrl-C"). The shared handling is in bot.termination."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAUSED = "paused while the commands load"
# `qunyi ARGS` paused inside the import of the first command module, where no command's own stop
# handling is in place yet: the signal the test sends lands there.
PAUSED_COMMAND = f"""
import sys


class PauseInCommands:
    def find_spec(self, name, path=None, target=None):
        if name == "bot.cli.run":
            print({PAUSED!r}, flush=True)
            sys.stdin.readline()
        return None


sys.meta_path.insert(0, PauseInCommands())
from bot.cli.main import main
main()
"""


@pytest.mark.parametrize(
    ("stop_signal", "code", "line"),
    [
        (signal.SIGTERM, 143, "qunyi people: terminated by SIGTERM"),
        (signal.SIGINT, 130, "qunyi people: stopped by Ctrl-C"),
    ],
    ids=["SIGTERM", "SIGINT"],
)
def test_a_signal_ends_any_command_with_its_own_code_and_line(
    tmp_path: Path, stop_signal: signal.Signals, code: int, line: str
) -> None:
    """A command with no stop handling of its own (`people list`) died of a SIGTERM at once, without a
    word or its cleanup (exit -15); `compact` and `recall` took it as Ctrl-C, saying "stopped by
    Ctrl-C" with 130. A SIGTERM now ends every command with 143 saying it was terminated."""
    args = ["people", "list", "--chat", "replay:g1", "--data-dir", str(tmp_path / "d")]
    command = subprocess.Popen(
        [sys.executable, "-c", PAUSED_COMMAND, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
    )
    assert command.stdout is not None
    try:
        assert command.stdout.readline() == f"{PAUSED}\n"
        command.send_signal(stop_signal)
        output, _ = command.communicate(timeout=120)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    assert command.returncode == code, output
    assert output.splitlines()[-1] == line, output
    assert "Traceback" not in output and "Aborted!" not in output, output


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_qunyi_web_stops_cleanly_on_a_signal_once_it_says_it_serves(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    """A server, like `qunyi run`, ends with 0 on either signal. It said it served before its signal
    handlers were in place: a SIGTERM sent on reading that line killed it (-15), or now ended it as a
    command terminated while starting (143)."""
    web = subprocess.Popen(
        [sys.executable, "-m", "bot.cli.main", "web", "--port", "0", "--data-dir", str(tmp_path / "d")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
    )
    assert web.stdout is not None
    try:
        first = web.stdout.readline()
        assert first.startswith("Qunyi admin console on "), first
        web.send_signal(stop_signal)
        output, _ = web.communicate(timeout=120)
    finally:
        if web.poll() is None:
            web.kill()
            web.wait()
    assert web.returncode == 0, output
    assert "Traceback" not in output and "terminated" not in output, output
