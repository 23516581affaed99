"""`qunyi backup DEST`: a consistent copy of the database and notes, taken while the bot writes, that is
itself a data directory; a taken destination or a failed copy leaves nothing behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bot import backup as backup_module
from bot.backup import BackupFailed, back_up
from bot.cli.main import cli
from memory.storage import snapshot
from memory.storage.snapshot import CopyStopped
from tests.bot.test_replay import write_log
from tests.conftest import database_locked


def qunyi(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "250"})


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data directory with the replayed sample log and one note in the global scope."""
    folder = tmp_path / "data"
    log = write_log(tmp_path / "log.jsonl")
    assert qunyi("replay", log, "--data-dir", folder, "--no-progress", "--settle-minutes", "0").exit_code == 0
    written = CliRunner().invoke(
        cli, ["notes", "set", "爬山", "--chat", "global", "--data-dir", str(folder)], input="周六九溪\n"
    )
    assert written.exit_code == 0, written.output
    return folder


def test_the_data_directory_and_a_backup_qunyi_makes_are_its_owners_alone(tmp_path: Path) -> None:
    """Both were made with the umask's 0755 and the database 0644: on a shared machine any local user
    could read every chat's messages, private chats too, from the data directory or a backup."""
    data, destination = tmp_path / "data", tmp_path / "backups" / "today"
    previous = os.umask(0o022)  # the usual umask, which let others in
    try:
        made = CliRunner().invoke(
            cli, ["notes", "set", "爬山", "--chat", "global", "--data-dir", str(data)], input="周六九溪\n"
        )
        assert made.exit_code == 0, made.output
        assert qunyi("backup", destination, "--data-dir", data).exit_code == 0
    finally:
        os.umask(previous)
    for folder in (data, destination):
        assert folder.stat().st_mode & 0o777 == 0o700, oct(folder.stat().st_mode)


def test_a_backup_taken_while_another_process_writes_is_a_whole_data_directory(
    data: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "backups" / "today"
    with database_locked(data / "qunyi.db"):
        result = qunyi("backup", destination, "--data-dir", data, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["path"] == str(destination) and report["chats"] == 1 and report["notes"] == 1
    assert report["messages"] > 0 and report["database_bytes"] == (destination / "qunyi.db").stat().st_size
    original = qunyi("recall", "爬山", "--chat", "replay:g1", "--data-dir", data)
    copied = qunyi("recall", "爬山", "--chat", "replay:g1", "--data-dir", destination)
    assert copied.exit_code == 0 and copied.output == original.output and "爬山" in copied.output
    note = qunyi("notes", "get", "爬山", "--chat", "global", "--data-dir", destination)
    assert "周六九溪" in note.output
    assert sorted(p.name for p in destination.parent.iterdir()) == ["today"], "no partial folder is left"


def test_a_backup_never_overwrites(data: Path, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine", encoding="utf-8")
    result = qunyi("backup", taken, "--data-dir", data)
    assert result.exit_code == 1 and "already exists and is not an empty folder" in result.output
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    inside = qunyi("backup", data / "copy", "--data-dir", data)
    assert inside.exit_code == 1 and "inside the data directory" in inside.output
    assert not (data / "copy").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert qunyi("backup", empty, "--data-dir", data).exit_code == 0
    assert (empty / "qunyi.db").is_file()


def test_a_backup_that_fails_midway_leaves_nothing(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shutil, "copytree", disk_full)  # the notes come after the database
    result = qunyi("backup", tmp_path / "out" / "b", "--data-dir", data)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "No space left on device" in result.output
    assert list((tmp_path / "out").iterdir()) == []


def test_no_database_or_not_a_database_is_a_one_line_error(tmp_path: Path) -> None:
    missing = qunyi("backup", tmp_path / "b", "--data-dir", tmp_path / "typo")
    assert missing.exit_code == 1 and f"no database in {tmp_path / 'typo'}" in missing.output
    garbage = tmp_path / "g"
    garbage.mkdir()
    (garbage / "qunyi.db").write_bytes(b"not a sqlite database" * 10)
    broken = qunyi("backup", tmp_path / "b", "--data-dir", garbage)
    assert broken.exit_code == 1 and "file is not a database" in broken.output
    assert not (tmp_path / "b").exists() and not (tmp_path / "typo").exists()


def test_a_backup_goes_into_an_empty_folder_that_exists_however_it_is_named(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`.` (the folder one is in), a symlink to an empty folder (and a mounted drive, which cannot be
    removed and renamed over) are each an empty folder: the backup fills it. Before, the empty folder
    was removed and the copy renamed in its place, which failed for each ('Invalid argument', 'Not a
    directory', 'Device or resource busy')."""
    here = tmp_path / "这里 backups"
    here.mkdir()
    monkeypatch.chdir(here)
    into_here = qunyi("backup", ".", "--data-dir", data)
    assert into_here.exit_code == 0, into_here.output
    assert sorted(p.name for p in here.iterdir()) == ["notes", "qunyi.db"]
    target = tmp_path / "usb"
    target.mkdir()
    (tmp_path / "latest").symlink_to(target)
    linked = qunyi("backup", tmp_path / "latest", "--data-dir", data, "--json")
    assert linked.exit_code == 0, linked.output
    assert sorted(p.name for p in target.iterdir()) == ["notes", "qunyi.db"]
    note = qunyi("notes", "get", "爬山", "--chat", "global", "--data-dir", tmp_path / "latest")
    assert "周六九溪" in note.output


class SetOnceLookedAt(threading.Event):
    """A stop event set the moment it is first looked at: Ctrl-C pressed once the copy has begun."""

    def is_set(self) -> bool:
        """False the first time, True from then on."""
        was = super().is_set()
        self.set()
        return was


def test_a_backup_stopped_midway_by_ctrl_c_leaves_nothing(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`qunyi backup` sets the stop event on Ctrl-C. Before, Ctrl-C went unheard until the whole database
    was copied, and the backup was then put in place though the command said 'Aborted!'."""
    monkeypatch.setattr(snapshot, "STEP_PAGES", 4)  # the copy takes many steps: stopped inside it
    with pytest.raises(CopyStopped):
        back_up(data, tmp_path / "b", stop=SetOnceLookedAt())
    assert not (tmp_path / "b").exists()
    assert not [p.name for p in tmp_path.iterdir() if ".partial" in p.name]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CopyStopped):
        back_up(data, empty, stop=SetOnceLookedAt())
    assert list(empty.iterdir()) == []


def test_a_destination_behind_a_symlink_that_leads_nowhere_is_refused_before_anything_is_copied(
    data: Path, tmp_path: Path
) -> None:
    """A dangling symlink as DEST (a `latest` link to a drive that is not mounted) failed after the
    whole database was copied, with 'cannot write …: Not a directory'; it is now refused first, naming
    the link and where it leads."""
    (tmp_path / "latest").symlink_to(tmp_path / "usb" / "backups")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for destination, link in (
        (tmp_path / "latest", tmp_path / "latest"),
        (tmp_path / "latest" / "today", tmp_path / "latest"),
        (tmp_path / "loop", tmp_path / "loop"),
    ):
        result = qunyi("backup", destination, "--data-dir", data)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert f"{link} is a symbolic link to {os.readlink(link)}, which does not exist" in result.output
    assert not (tmp_path / "usb").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "latest", "log.jsonl", "loop"]


def test_a_destination_under_a_file_is_refused_naming_the_file(data: Path, tmp_path: Path) -> None:
    """`DEST=somefile/sub` said 'cannot write …: File exists', as if the destination were taken."""
    (tmp_path / "somefile").write_text("mine", encoding="utf-8")
    for destination in (tmp_path / "somefile" / "sub", tmp_path / "somefile" / "sub" / "deeper"):
        result = qunyi("backup", destination, "--data-dir", data)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert f"{tmp_path / 'somefile'} is a file, not a folder" in result.output
        assert "File exists" not in result.output
    assert (tmp_path / "somefile").read_text(encoding="utf-8") == "mine"


def test_a_note_written_while_the_backup_copies_the_notes_does_not_fail_it(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note write goes to a temporary file renamed over the note when whole. The backup listed the
    notes folder, the bot's write finished (the temporary file renamed away), and copying the listed
    file then failed the whole backup ("cannot write DEST: [… No such file or directory …]"): 13 of 60
    backups taken while another thread kept writing a note failed. Here the write finishes as the copy reaches
    the folder's files (patched in: the timing of another process's write cannot be arranged else)."""
    folder = data / "notes" / "global"
    (folder / ".tmp-writing.part").write_text("周六九溪，早上八点", encoding="utf-8")
    copy = shutil.copyfile

    def bot_finishes_its_write_first(source: str, target: str, **kwargs: bool) -> object:
        pending = folder / ".tmp-writing.part"
        if pending.exists():
            os.replace(pending, folder / "爬山.md")
        return copy(source, target, **kwargs)

    monkeypatch.setattr(shutil, "copyfile", bot_finishes_its_write_first)
    destination = tmp_path / "b"
    result = qunyi("backup", destination, "--data-dir", data)
    assert result.exit_code == 0, result.output
    copied = destination / "notes" / "global"
    assert sorted(p.name for p in copied.iterdir()) == ["爬山.md"], "no lock or temporary file copied"
    note = qunyi("notes", "get", "爬山", "--chat", "global", "--data-dir", destination)
    assert note.output.strip() == "周六九溪，早上八点", "the note as the write left it"


# `qunyi backup` killed (SIGKILL) at a chosen point: in the notes' copy, the database copied already into
# the hidden work folder, or once the notes are moved up into an empty folder, before the database.
KILLED_BACKUP = """
import os, signal, sys
from pathlib import Path
import bot.backup

if sys.argv[1] == "copying":
    def copy_notes(*_args):
        os.kill(os.getpid(), signal.SIGKILL)

    bot.backup.copy_notes = copy_notes
else:
    rename = Path.rename

    def rename_then_die(self, target):
        moved = rename(self, target)
        if Path(target).name == "notes":
            os.kill(os.getpid(), signal.SIGKILL)
        return moved

    Path.rename = rename_then_die
from bot.cli.main import cli
cli(sys.argv[2:])
"""


@pytest.mark.parametrize(
    ("into", "killed"), [("new", "copying"), ("empty", "copying"), ("empty", "moving"), (".", "copying")]
)
def test_a_backup_killed_midway_leaves_nothing_in_the_way_of_the_next(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, into: str, killed: str
) -> None:
    """A killed backup left its hidden work folder, a whole copy of the database, beside a new DEST for
    good, and inside an empty DEST (`.` too) it made the next backup there fail ('already exists and is
    not an empty folder'), also when it was killed with the notes moved up and the database not. The
    next backup to the same DEST now removes what a killed one left, and makes the backup."""
    destination = tmp_path / "backups" / "today"
    destination.parent.mkdir()
    if into != "new":
        destination.mkdir()
    named = str(destination)
    if into == ".":
        monkeypatch.chdir(destination)
        named = "."
    root = Path(__file__).resolve().parents[2]
    crashed = subprocess.run(
        [sys.executable, "-c", KILLED_BACKUP, killed, "backup", named, "--data-dir", str(data)],
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        timeout=120,
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert [p for p in (tmp_path / "backups").rglob("*") if ".partial-" in p.name], "it left its work folder"
    result = qunyi("backup", named, "--data-dir", data, "--json")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "backups").iterdir()) == ["today"]
    assert sorted(p.name for p in destination.iterdir()) == ["notes", "qunyi.db"]
    assert json.loads(result.output)["notes"] == 1
    note = qunyi("notes", "get", "爬山", "--chat", "global", "--data-dir", destination)
    assert "周六九溪" in note.output


def test_the_work_folder_of_a_backup_still_running_is_left_alone(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a work folder no backup holds any more is taken for a killed backup's: a second backup into
    the same empty folder while the first copies is refused, and the first one goes on."""
    destination = tmp_path / "empty"
    destination.mkdir()
    copy_notes = backup_module.copy_notes
    refused: list[str] = []

    def another_backup_meanwhile(source: Path, target: Path) -> None:
        monkeypatch.setattr(backup_module, "copy_notes", copy_notes)
        with pytest.raises(BackupFailed) as second:
            back_up(data, destination)
        refused.append(str(second.value))
        copy_notes(source, target)

    monkeypatch.setattr(backup_module, "copy_notes", another_backup_meanwhile)
    back_up(data, destination)
    assert refused == [f"{destination} already exists and is not an empty folder; name a new one"]
    assert sorted(p.name for p in destination.iterdir()) == ["notes", "qunyi.db"]
