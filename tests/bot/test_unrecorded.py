"""Messages `qunyi run` could not store before it stopped, the database held by another process: kept in
the data directory and stored at the next start, in order, none lost and none twice."""

from __future__ import annotations

import signal
import sqlite3
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from bot import unrecorded
from bot.cli.main import cli
from memory.service import MemoryService
from memory.types import ChatKind, Segment, SegmentKind
from tests.bot.test_doctor import doctor, make_database
from tests.bot.test_run_cli import _console_bot, _texts, _wait_for, _wait_for_output, _wait_for_texts
from tests.conftest import make_message


def test_messages_met_by_a_lock_as_the_bot_stops_are_stored_at_the_next_start(tmp_path: Path) -> None:
    """They used to be dropped with an error line: the console (like any live platform) cannot give
    them again."""
    config = tmp_path / "config.toml"
    config.write_text('[storage]\nbusy_timeout_ms = 200\n[logging]\nlevel = "WARNING"\n', encoding="utf-8")
    data, log = tmp_path / "data", tmp_path / "out.txt"
    locked = ["周六去西湖边爬山 🧗‍♀️", "second while locked"]
    with _console_bot(data, config, log) as bot:
        _wait_for(data / "qunyi.pid")
        assert bot.stdin is not None
        bot.stdin.write("first\n")
        bot.stdin.flush()
        _wait_for_texts(data / "qunyi.db", 1)
        holder = sqlite3.connect(data / "qunyi.db", isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            bot.stdin.write("".join(f"{line}\n" for line in locked))
            bot.stdin.flush()
            _wait_for_output(log, "will be tried again", 1)  # the first of them waits for the lock
            bot.send_signal(signal.SIGTERM)
            bot.wait(timeout=60)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
    output = log.read_text(encoding="utf-8")
    assert bot.returncode == 0 and "Traceback" not in output, output
    assert _texts(data / "qunyi.db") == ["first"]
    assert output.count(f"kept in {data / unrecorded.FILE_NAME}") == len(locked), output
    with _console_bot(data, config, tmp_path / "again.txt") as bot:
        _wait_for(data / "qunyi.pid")
        _wait_for_texts(data / "qunyi.db", 1 + len(locked))
        bot.send_signal(signal.SIGTERM)
        bot.wait(timeout=60)
    assert bot.returncode == 0, (tmp_path / "again.txt").read_text(encoding="utf-8")
    assert _texts(data / "qunyi.db") == ["first", *locked], "stored once each, in order"
    assert not (data / unrecorded.FILE_NAME).exists()


async def test_a_kept_message_is_stored_with_every_field_and_a_broken_line_is_left_out(
    memory: MemoryService, tmp_path: Path
) -> None:
    message = replace(
        make_message(1, text="@小明 周六爬山 👨‍👩‍👧"),
        chat_kind=ChatKind.PRIVATE,
        mentions=("u2",),
        segments=(Segment(SegmentKind.MENTION, "@小明", "u2"), Segment(SegmentKind.TEXT, " 周六爬山 👨‍👩‍👧")),
        reply_to="m0",
        to_bot=True,
        forwarded=True,
    )
    assert unrecorded.from_line(unrecorded.to_line(message, False)) == (message, False)
    unrecorded.keep(tmp_path, message, True)
    with (tmp_path / unrecorded.FILE_NAME).open("a", encoding="utf-8") as out:
        out.write('{"message": {"platform": "test", "chat_id"\n')  # cut short by a crash
    unrecorded.keep(tmp_path, make_message(2), True)
    assert await unrecorded.record_kept(memory, tmp_path) == 3
    assert [m.text for m in await memory.recent(1, 5)] == [message.text, "message 2"]
    assert not (tmp_path / unrecorded.FILE_NAME).exists()
    assert await unrecorded.record_kept(memory, tmp_path) == 0


def test_kept_messages_go_into_a_backup_and_doctor_says_they_wait(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_database(data)
    assert "unrecorded messages" not in doctor(data).output
    for n in (1, 2):
        unrecorded.keep(data, make_message(n, text=f"周六爬山 {n}"), True)
    said = doctor(data)
    assert said.exit_code == 0 and f"2 in {data / unrecorded.FILE_NAME}" in said.output, said.output
    copy = tmp_path / "copy"
    result = CliRunner().invoke(cli, ["backup", str(copy), "--data-dir", str(data)])
    assert result.exit_code == 0, result.output
    kept = (data / unrecorded.FILE_NAME).read_text(encoding="utf-8")
    assert (copy / unrecorded.FILE_NAME).read_text(encoding="utf-8") == kept
