"""`qunyi run` as a process: shutdown on SIGTERM with the console's input still open, lines typed
just before it kept."""

from __future__ import annotations

import gc
import os
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest
from click.testing import CliRunner

from bot.cli import run as run_cli
from bot.cli.main import cli
from bot.cli.run import prepare_process
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def _start(
    data: Path, config: Path, output: IO[str] | int, launcher: Sequence[str] = ("-m", "bot.cli.main")
) -> subprocess.Popen[str]:
    """`qunyi run` as a process (`python LAUNCHER run …`), its input a pipe, its output to `output`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, *launcher, "run", "--config", str(config), "--data-dir", str(data)],
        stdin=subprocess.PIPE,
        stdout=output,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=ROOT,
    )


@contextmanager
def _console_bot(data: Path, config: Path, log: Path) -> Iterator[subprocess.Popen[str]]:
    """A running console bot writing to `log`; killed at the end if the test did not stop it."""
    with log.open("w", encoding="utf-8") as out:
        bot = _start(data, config, out)
    try:
        yield bot
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()
        assert bot.stdin is not None
        bot.stdin.close()


def python(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`python ARGS…` run to its end from the repository, with no input, its output captured."""
    return subprocess.run(
        [sys.executable, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        timeout=timeout,
    )


def _run_once(data: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """`qunyi run` with no input, to its end."""
    return python("-m", "bot.cli.main", "run", "--config", str(config), "--data-dir", str(data))


def _wait_for(path: Path) -> None:
    wait_until(path.exists, f"{path} appeared")


def _texts(database: Path) -> list[str]:
    with sqlite3.connect(database) as db:
        return [row[0] for row in db.execute("SELECT text FROM messages ORDER BY id")]


def _wait_for_pid(data: Path, pid: int) -> None:
    """Wait until the data directory's pid file names `pid` (the bot holds it)."""
    pid_file = data / "qunyi.pid"
    wait_until(lambda: pid_file.exists() and pid_file.read_text() == str(pid), f"{pid_file} named {pid}")


def _wait_for_texts(database: Path, count: int) -> None:
    wait_until(lambda: len(_texts(database)) >= count, f"{count} messages recorded")


def _wait_for_output(log: Path, said: str, count: int = 1) -> None:
    """Wait until the bot's output `log` holds `said` `count` times."""
    wait_until(lambda: log.read_text(encoding="utf-8").count(said) >= count, f"{said!r} said {count} times")


def test_sigterm_stops_the_console_bot_while_its_input_stays_open(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[logging]\nlevel = "WARNING"\n', encoding="utf-8")
    data = tmp_path / "data"
    log = tmp_path / "out.txt"
    with _console_bot(data, config, log) as bot:
        _wait_for(data / "qunyi.pid")
        assert bot.stdin is not None
        bot.stdin.write("周六去西湖边爬山\n")
        bot.stdin.flush()
        _wait_for_texts(data / "qunyi.db", 1)  # the console now waits for its next line
        bot.stdin.write("last words\n")
        bot.stdin.flush()
        _wait_for_texts(data / "qunyi.db", 2)  # and waits again, its input still open
        bot.send_signal(signal.SIGTERM)
        bot.wait(timeout=30)  # the input pipe is still open: no end of input stops it
    output = log.read_text(encoding="utf-8")
    assert bot.returncode == 0, output
    assert "Traceback" not in output
    assert not (data / "qunyi.pid").exists()
    assert _texts(data / "qunyi.db") == ["周六去西湖边爬山", "last words"]


def test_a_second_bot_on_the_same_data_dir_is_refused_and_keeps_the_first_ones_pid_file(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[logging]\nlevel = "WARNING"\n', encoding="utf-8")
    data = tmp_path / "data"
    with (tmp_path / "first.txt").open("w", encoding="utf-8") as out:
        first = _start(data, config, out)
    try:
        _wait_for_pid(data, first.pid)
        second = _run_once(data, config)
        assert second.returncode == 1
        assert f"another bot (pid {first.pid}) is already running" in second.stderr
        assert "Traceback" not in second.stderr
        assert (data / "qunyi.pid").read_text() == str(first.pid)
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=30)
        assert first.stdin is not None
        first.stdin.close()
    assert first.returncode == 0
    assert not (data / "qunyi.pid").exists()


def test_an_adapter_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "config.toml"
        config.write_text(
            f'[adapters]\nenabled = ["onebot_v11"]\n[adapters.onebot_v11]\nport = {port}\n',
            encoding="utf-8",
        )
        result = _run_once(tmp_path, config)
    assert result.returncode == 1
    assert (
        f"Error: cannot start the qq adapter: cannot listen on 127.0.0.1:{port} (Address already in use); "
        "another program holds that port: change [adapters.onebot_v11] port"
    ) in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "qunyi.pid").exists()


def test_the_scheduler_does_not_log_every_job_run_into_the_console_chat(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[logging]\nlevel = "INFO"\n[scheduler]\nconfig_watch_seconds = 0.2\n', encoding="utf-8"
    )
    data = tmp_path / "data"
    log = tmp_path / "out.txt"
    with _console_bot(data, config, log) as bot:
        _wait_for(data / "qunyi.pid")
        changed = config.stat().st_mtime
        for turn in (1, 2):  # two turns of the config watch job, each shown by the reload it makes
            changed += 1
            os.utime(config, (changed, changed))
            _wait_for_output(log, "config reloaded", turn)
        assert bot.stdin is not None
        bot.stdin.write("/quit\n")
        bot.stdin.flush()
        bot.wait(timeout=30)
    output = log.read_text(encoding="utf-8")
    assert bot.returncode == 0, output
    assert "Type to chat" in output
    assert "apscheduler" not in output, output


def _reload(data: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return python("-m", "bot.cli.main", "reload", "--config", str(config), "--data-dir", str(data))


def test_reload_signals_the_running_bot(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[logging]\nlevel = "INFO"\n[scheduler]\nconfig_watch_seconds = 0\n', encoding="utf-8")
    data = tmp_path / "data"
    log = tmp_path / "out.txt"
    with _console_bot(data, config, log) as bot:
        _wait_for_pid(data, bot.pid)
        result = _reload(data, config)
        assert result.returncode == 0, result.stderr
        assert f"asked the bot (pid {bot.pid}) to reload" in result.stdout
        assert f"the bot reloaded {config}" in result.stdout
        _wait_for_output(log, "config reloaded")
        bot.send_signal(signal.SIGTERM)
        bot.wait(timeout=30)
    assert bot.returncode == 0


def test_reload_reports_the_bots_own_verdict_on_its_own_config(tmp_path: Path) -> None:
    """The command checks the file it is given with its own environment; the bot reloads its own file
    with its own. Here the bot's file was broken after it started while the one checked is fine: the
    command said "asked the bot to reload" and succeeded, and the bot quietly kept its old settings."""
    bots_config = tmp_path / "bot.toml"
    bots_config.write_text("[scheduler]\nconfig_watch_seconds = 0\n", encoding="utf-8")
    checked = tmp_path / "checked.toml"
    checked.write_text("", encoding="utf-8")
    data = tmp_path / "data"
    with _console_bot(data, bots_config, tmp_path / "out.txt") as bot:
        _wait_for_pid(data, bot.pid)
        bots_config.write_text("[reply]\nprobability = 7\n", encoding="utf-8")
        result = _reload(data, checked)
        bot.send_signal(signal.SIGTERM)
        bot.wait(timeout=30)
    assert result.returncode == 1, result.stdout
    assert "the bot rejected the reload, its settings stay in force" in result.stderr
    assert "reply.probability" in result.stderr
    assert "Traceback" not in result.stderr


def test_reload_says_so_when_the_bot_does_not_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process holding the bot's pid lock that never answers (stuck, or a version that wrote no
    answer) is reported as such, with a failing exit status."""
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    data = tmp_path / "data"
    data.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, signal, sys, time\n"
            "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
            f"f = open({str(data / 'qunyi.pid')!r}, 'a+')\n"
            "fcntl.flock(f, fcntl.LOCK_EX)\n"
            "f.write(str(os.getpid())); f.flush(); print('held', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(run_cli, "RELOAD_ANSWER_SECONDS", 0.3)
        result = CliRunner().invoke(cli, ["reload", "--config", str(config), "--data-dir", str(data)])
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 1, result.output
    assert f"the bot (pid {holder.pid}) did not answer" in result.output


# A process that says which of SIGHUP (what reload sends a bot) and SIGUSR1 (the test's ping) it got.
BYSTANDER = """
import signal, time
signal.signal(signal.SIGHUP, lambda *_: print("hup", flush=True))
signal.signal(signal.SIGUSR1, lambda *_: print("ping", flush=True))
print("ready", flush=True)
time.sleep(60)
"""


def test_reload_leaves_alone_the_process_a_stale_pid_file_names(tmp_path: Path) -> None:
    """A bot that was killed leaves its pid file; the number may belong to another process by now.
    Only a pid file still locked by a running bot is signalled (SIGHUP would end most processes)."""
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    data = tmp_path / "data"
    data.mkdir()
    bystander = subprocess.Popen([sys.executable, "-c", BYSTANDER], stdout=subprocess.PIPE, text=True)
    try:
        assert bystander.stdout is not None and bystander.stdout.readline() == "ready\n"
        (data / "qunyi.pid").write_text(str(bystander.pid), encoding="utf-8")
        result = _reload(data, config)
        assert result.returncode == 1
        assert "config is valid, but no running bot was found" in result.stderr
        assert "Traceback" not in result.stderr
        # Sent after any SIGHUP from the reload, and handled after it (Python runs the handlers of
        # pending signals lowest number first): the first line the bystander says shows which came.
        bystander.send_signal(signal.SIGUSR1)
        assert bystander.stdout.readline() == "ping\n", "the unrelated process was signalled"
    finally:
        bystander.kill()
        bystander.wait()


LOADING = "the commands are loading"
# `qunyi run` paused inside the import of its first command module: the test's Ctrl-C lands there.
LOADING_BOT = f"""
import sys


class PauseInCommands:
    def find_spec(self, name, path=None, target=None):
        if name == "bot.cli.run":
            print({LOADING!r}, flush=True)
            sys.stdin.readline()
        return None


sys.meta_path.insert(0, PauseInCommands())
from bot.cli.main import main
main()
"""


def test_ctrl_c_while_the_commands_load_is_no_traceback(tmp_path: Path) -> None:
    """Loading the commands takes seconds on a busy machine; a Ctrl-C then printed a KeyboardInterrupt
    traceback from deep inside some import, and later click's bare "Aborted!" with exit code 1: now one
    line saying what stopped, and 130 as for any program SIGINT ends."""
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    bot = _start(tmp_path / "data", config, subprocess.PIPE, ("-c", LOADING_BOT))
    assert bot.stdin is not None and bot.stdout is not None
    try:
        first = bot.stdout.readline()
        assert first == f"{LOADING}\n", first
        bot.send_signal(signal.SIGINT)
        output, _ = bot.communicate(timeout=120)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()
    assert output.splitlines()[-1] == "qunyi run: stopped by Ctrl-C before the bot started", output
    assert bot.returncode == 130 and "Aborted!" not in output, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output


def test_ctrl_c_in_the_middle_of_a_command_says_so_in_one_line_and_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command stopped by Ctrl-C midway (here while it reads the dictionary) ended with click's
    "Aborted!" and exit code 1, as an error would."""
    from memory.jargon import dictionary

    data = ["--data-dir", str(tmp_path / "d")]
    terms = tmp_path / "terms.csv"
    terms.write_text("content,meaning\n开炉,吃火锅\n", encoding="utf-8")
    assert CliRunner().invoke(cli, ["jargon", "import", str(terms), *data]).exit_code == 0

    async def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(dictionary, "list_entries", interrupted)
    result = CliRunner().invoke(cli, ["jargon", "list", *data])
    assert result.exit_code == 130, result.output
    assert (
        result.output.splitlines()[-1] == "qunyi jargon: stopped by Ctrl-C"
        and "Aborted!" not in result.output
    )


def test_what_the_bot_loads_before_it_starts_is_kept_out_of_full_collections() -> None:
    """The text tables and modules (~380,000 objects) would otherwise be walked, with the GIL held,
    by every full collection: 0.2-0.3 s in which the event loop cannot run."""
    try:
        prepare_process()
        assert gc.get_freeze_count() > 100_000
    finally:
        gc.unfreeze()


def test_a_console_bot_without_a_terminal_says_why_it_stops(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[logging]\nlevel = "WARNING"\n', encoding="utf-8")
    done = _run_once(tmp_path / "data", config)
    assert done.returncode == 0, done.stderr
    assert "input ended" in done.stderr and "[adapters] enabled" in done.stderr


def test_sigterm_while_an_adapter_is_starting_stops_the_bot_without_waiting_out_the_start(
    tmp_path: Path,
) -> None:
    """Telegram's start asks getMe; with a Bot API that takes the connection and never answers, SIGTERM
    (or Ctrl+C) went unheeded until aiogram's request timed out a minute later, and the bot then ended
    with "Error: cannot start the telegram adapter: … Request timeout error" and exit status 1."""
    with socket.socket() as silent:  # accepts (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        api = f"http://127.0.0.1:{silent.getsockname()[1]}"
        config = tmp_path / "config.toml"
        config.write_text(
            '[adapters]\nenabled = ["telegram"]\n'
            f'[adapters.telegram]\ntoken = "123456:ABCdefGhIJKlmnoPQRstuVWXyz"\napi_base = "{api}"\n',
            encoding="utf-8",
        )
        data, log = tmp_path / "data", tmp_path / "out.txt"
        with _console_bot(data, config, log) as bot:
            silent.settimeout(60)
            asked, _ = silent.accept()  # getMe is under way: the signal handlers are set by now
            with asked:
                bot.send_signal(signal.SIGTERM)
                bot.wait(timeout=120)
    output = log.read_text(encoding="utf-8")
    assert bot.returncode == 0, output
    assert "cannot start" not in output and "Traceback" not in output
    assert "stopped while the telegram adapter was starting" in output
    assert not (data / "qunyi.pid").exists()
