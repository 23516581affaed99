"""CLI commands that write, meeting a database another process holds (`BEGIN IMMEDIATE`): they wait the
configured busy timeout, then either do their work once the lock is let go within it, or end with a
one-line error and change nothing. Real SQLite, the other process's writer a second connection."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bot.cli.main import cli
from tests.conftest import database_locked

BUSY_MS = 300
LINES = [
    "周六去九溪爬山",
    "我住在杭州",
    "绝绝子 好看",
    "真的绝绝子",
    "绝绝子 冲",
    "九溪爬山带水",
]
COMMANDS = {
    "jargon approve": ["jargon", "approve", "1", "--meaning", "形容非常好"],
    "jargon reject": ["jargon", "reject", "1"],
    "people forget": ["people", "forget", "u1", "--chat", "replay:g1", "--yes"],
    "forget": ["forget"],
}


def _qunyi(args: list[str], data: Path, config: Path) -> Result:
    return CliRunner().invoke(cli, [*args, "--data-dir", str(data), "--config", str(config)])


def _replayed(tmp_path: Path, busy_ms: int) -> tuple[Path, Path]:
    """A data directory holding messages, people, a mined jargon entry and ChatHistory rows nothing
    has forgotten yet, and a config whose forgetting pass would delete some of them."""
    log = tmp_path / "log.jsonl"
    rows = [
        {
            "chat": "g1",
            "message_id": f"m{n}",
            "sender_id": f"u{n % 3}",
            "sender_name": f"成员{n % 3}",
            "time": 1772367300 + 60 * n + 3600 * (n // 6),
            "text": text,
        }
        for n, text in enumerate(LINES * 3, 1)
    ]
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    config = tmp_path / "config.toml"
    settings = (
        "[jargon]\nmin_df = 2\nmin_lift = 0.0\nmin_new_messages = 1\n"
        "[topics]\nmin_messages = 1\npack_after_quiet_minutes = 30.0\n"
        '[forgetting]\nsmall_cohort = "round_up"\nenabled = {}\n'
    )
    config.write_text(settings.format("false"), encoding="utf-8")
    data = tmp_path / "d"
    result = _qunyi(["replay", str(log), "--no-progress", "--settle-minutes", "120"], data, config)
    assert result.exit_code == 0, result.output
    config.write_text(f"[storage]\nbusy_timeout_ms = {busy_ms}\n" + settings.format("true"), encoding="utf-8")
    return data, config


def _dump(data: Path) -> list[str]:
    with sqlite3.connect(data / "qunyi.db") as db:
        return list(db.iterdump())


@pytest.mark.parametrize("args", list(COMMANDS.values()), ids=list(COMMANDS))
def test_a_write_command_meeting_a_lock_held_past_the_busy_timeout_is_one_line_and_changes_nothing(
    args: list[str], tmp_path: Path
) -> None:
    """`qunyi jargon approve|reject` used to end in a DatabaseLocked traceback: the jargon commands run
    their coroutine outside the decorator that turned it into a one-line error."""
    data, config = _replayed(tmp_path, BUSY_MS)
    before = _dump(data)
    with database_locked(data / "qunyi.db"):
        result = _qunyi(args, data, config)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    [line] = result.output.splitlines()
    assert line.startswith(f"Error: database {data / 'qunyi.db'} stayed locked for over {BUSY_MS} ms"), line
    # the tail used to say "importing or replaying again adds only the rest" whatever the command
    assert line.endswith("nothing of the change that met the lock was made"), line
    assert "import" not in line and "replay" not in line, line
    assert _dump(data) == before, "nothing written"
    assert _qunyi(args, data, config).exit_code == 0, "the same command goes through once the lock is gone"
    assert _dump(data) != before, "the command changes something (else the lock test proves nothing)"


@pytest.mark.parametrize("args", list(COMMANDS.values()), ids=list(COMMANDS))
def test_a_write_command_meeting_a_lock_let_go_within_the_busy_timeout_waits_and_goes_through(
    args: list[str], tmp_path: Path
) -> None:
    data, config = _replayed(tmp_path, 60_000)
    before = _dump(data)
    result: list[Result] = []
    command = threading.Thread(target=lambda: result.append(_qunyi(args, data, config)))
    with database_locked(data / "qunyi.db"):
        command.start()
        command.join(1.0)
        assert command.is_alive(), f"the command did not wait for the lock: {result[0].output}"
    command.join(120)
    assert not command.is_alive()
    assert result[0].exit_code == 0, result[0].output
    assert _dump(data) != before


@pytest.mark.parametrize(
    "command", [["import", "replay"], ["replay", "--no-progress", "--settle-minutes", "0"]]
)
def test_an_import_meeting_a_lock_held_past_the_busy_timeout_says_running_it_again_adds_the_rest(
    command: list[str], tmp_path: Path
) -> None:
    data, config = _replayed(tmp_path, BUSY_MS)
    log = tmp_path / "more.jsonl"
    row = {"chat": "g1", "message_id": "n1", "sender_id": "u1", "sender_name": "成员1", "time": 1772467300}
    log.write_text(json.dumps(row | {"text": "新"}, ensure_ascii=False) + "\n", encoding="utf-8")
    args = [*command, str(log)] + (["--no-progress"] if command[0] == "import" else [])
    with database_locked(data / "qunyi.db"):
        result = _qunyi(args, data, config)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    line = result.output.splitlines()[-1]
    assert line.startswith(f"Error: database {data / 'qunyi.db'} stayed locked for over {BUSY_MS} ms"), line
    assert line.endswith("importing or replaying again adds only the rest)"), line
