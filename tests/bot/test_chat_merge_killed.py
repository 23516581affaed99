"""`qunyi chats merge` killed (SIGKILL) between the commit of its merge and the move of the notes, which
are files, no part of the transaction: the next process opening the data directory moves them."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli.main import cli
from memory.notes import NOTES_FOLDER, NoteScopes
from tests.bot.test_chats_cli import _data

# `qunyi chats merge` killed (SIGKILL) between the commit of its merge and the move of the notes.
KILLED_BEFORE_THE_NOTES_MOVE = """
import os, signal, sys
from memory.notes import NoteScopes

async def die(*_args, **_kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

NoteScopes.merge_chat = die
from bot.cli.main import cli
cli(sys.argv[1:])
"""


@pytest.mark.parametrize("next_command", [["chats", "list"], ["notes", "list", "--chat", "qq:-4455"]])
def test_the_notes_of_a_merge_killed_before_moving_them_move_at_the_next_command(
    tmp_path: Path, next_command: list[str]
) -> None:
    """The merge is committed, its notes folder is moved after it: a merge killed in between left the
    notes where no key led any more (`notes list --chat FROM` showed INTO's), and running the merge
    again was refused as already made. The next command opening the data directory now moves them."""
    data = _data(tmp_path)
    for name, text in (("爬山计划", "九溪"), ("会议", "三楼")):
        note_set = ["notes", "set", name, "--chat", "telegram:-4455", *data]
        written = CliRunner().invoke(cli, note_set, input=text)
        assert written.exit_code == 0, written.output
    merge = ["chats", "merge", "telegram:-4455", "qq:-4455", "--any-platform", *data]
    crashed = subprocess.run(
        [sys.executable, "-c", KILLED_BEFORE_THE_NOTES_MOVE, *merge],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        timeout=120,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    with sqlite3.connect(tmp_path / "d" / "qunyi.db") as db:
        left = db.execute("SELECT count(*) FROM chats WHERE platform_chat_id = '-4455'").fetchone()
    assert left == (1,), "the merge was committed: the qq chat alone is left"

    def notes_of_into() -> list[str]:
        return asyncio.run(NoteScopes(tmp_path / "d" / NOTES_FOLDER).for_chat("qq:-4455").list())

    assert notes_of_into() == []
    assert CliRunner().invoke(cli, [*next_command, *data]).exit_code == 0
    assert notes_of_into() == ["会议", "爬山计划"]
    note = CliRunner().invoke(cli, ["notes", "get", "爬山计划", "--chat", "telegram:-4455", *data])
    assert note.exit_code == 0 and "九溪" in note.output, note.output
