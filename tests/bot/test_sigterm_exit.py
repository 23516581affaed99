"""SIGTERM stops a command as Ctrl-C does, with its cleanup, but ends it as terminated: exit code 143
and a line saying so (Ctrl-C: 130, "stopped by Ctrl-C"). The shared handling is in bot.termination."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.bot.test_run_cli import LOADING, LOADING_BOT

ROOT = Path(__file__).resolve().parents[2]


def signalled(launcher: Sequence[str], ready: str, stop_signal: signal.Signals, cwd: Path) -> tuple[int, str]:
    """`python LAUNCHER` sent `stop_signal` once its first line of output starts with `ready`: its exit
    code and output."""
    command = subprocess.Popen(
        [sys.executable, *launcher],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=cwd,
    )
    assert command.stdout is not None
    try:
        first = command.stdout.readline()
        assert first.startswith(ready), first
        command.send_signal(stop_signal)
        output, _ = command.communicate(timeout=120)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    return command.returncode, output


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
    """A command with no stop handling of its own (`people list`, here paused while the commands load)
    died of a SIGTERM at once, without a word or its cleanup (exit -15); `compact` and `recall` took it
    as Ctrl-C, saying "stopped by Ctrl-C" with 130. A SIGTERM now ends every command with 143 saying it
    was terminated."""
    args = ["people", "list", "--chat", "replay:g1", "--data-dir", str(tmp_path / "d")]
    # LOADING_BOT runs `qunyi` with the arguments given, pausing in the import of the first command module.
    returncode, output = signalled(["-c", LOADING_BOT, *args], LOADING, stop_signal, tmp_path)
    assert returncode == code, output
    assert output.splitlines()[-1] == line, output
    assert "Traceback" not in output and "Aborted!" not in output, output


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_qunyi_web_stops_cleanly_on_a_signal_once_it_says_it_serves(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    """A server, like `qunyi run`, ends with 0 on either signal. It said it served before its signal
    handlers were in place: a SIGTERM sent on reading that line killed it (-15), or now ended it as a
    command terminated while starting (143)."""
    web = ["-m", "bot.cli.main", "web", "--port", "0", "--data-dir", str(tmp_path / "d")]
    returncode, output = signalled(web, "Qunyi admin console on ", stop_signal, tmp_path)
    assert returncode == 0, output
    assert "Traceback" not in output and "terminated" not in output, output
