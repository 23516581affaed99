"""`qunyi backup`: copy a data directory (the database and the notes) into a new folder that is itself a
data directory, while the bot keeps running."""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from bot.holder_file import directory_locked
from bot.llm.usage_spill import held_files
from bot.unrecorded import FILE_NAME as UNRECORDED
from memory.notes import NOTES_FOLDER
from memory.notes.snapshot import copy_notes
from memory.storage.database import DB_FILENAME, PRIVATE_FOLDER_MODE, open_failure, require_database_file
from memory.storage.snapshot import CopyStopped, Snapshot, SnapshotFailed, snapshot_database

PARTIAL = ".partial-"
"""In the name of the hidden folder a backup is assembled in (with its pid): `.DEST.partial-<pid>` beside a
new DEST, `DEST/.partial-<pid>` inside an empty one. The backup holds it locked until it ends, so one
left unlocked is what a killed backup left behind."""
MOVED = ".moved"
"""In the work folder of a backup into an empty folder: the names of the parts it moves up, one a line,
so that the parts a backup killed while moving them moved already can be told from anything else."""


def waiting_files(data_dir: Path) -> list[str]:
    """The names of the files in `data_dir` of what the bot could not store yet (messages, LLM usage
    rows, also those a refused write left renamed): the next `qunyi run` stores them."""
    unrecorded = [UNRECORDED] if (data_dir / UNRECORDED).is_file() else []
    return unrecorded + [path.name for path in held_files(data_dir)]


class BackupFailed(RuntimeError):
    """No backup was made (the destination is taken, or it could not be written); nothing is left of it."""


@dataclass(frozen=True, slots=True)
class Backup:
    """A finished backup: the folder, its database snapshot and how many note files it holds."""

    folder: Path
    database: Snapshot
    notes: int


def _dangling_link(path: Path) -> Path | None:
    """`path` or the first of its parent folders that is a symbolic link leading nowhere, if one is: a
    backup would otherwise fail halfway ('Not a directory'), or make the folder a link names (say on a
    drive that is not mounted) where the link's owner did not mean it to be."""
    return next((p for p in (path, *path.parents) if p.is_symlink() and not p.exists()), None)


def _file_above(path: Path) -> Path | None:
    """The first parent folder of `path` that is a file, if one is: no folder can be made under it."""
    return next((p for p in path.parents if p.exists() and not p.is_dir()), None)


def back_up(
    data_dir: Path, destination: Path, busy_timeout_ms: int = 10_000, stop: threading.Event | None = None
) -> Backup:
    """Copy `data_dir`'s database and notes (and `waiting_files`, what the bot has yet to store) into
    `destination` (a new or empty folder; blocking).

    The copy is assembled in a hidden folder beside a new `destination` and renamed into place only
    when whole, so a crash or an error leaves no half backup behind. An empty `destination` that exists
    (`.`, a mount point, a symlink to a folder) stays the folder it is: the copy is assembled in a
    hidden folder inside it and its parts moved up when whole, the database last.

    Raises DatabaseMissing when there is no database, DatabaseUnavailable when it is not a Qunyi
    database, BackupFailed when `destination` is taken (a file, a folder with something in it, or
    inside the data directory), lies under a file, is or lies under a symbolic link that leads
    nowhere, or cannot be written, CopyStopped when `stop` is set (Ctrl-C) before the backup is in
    place: nothing of it is left then either."""
    source = data_dir / DB_FILENAME
    require_database_file(source)
    dangling = _dangling_link(destination)
    if dangling is not None:
        raise BackupFailed(
            f"{dangling} is a symbolic link to {os.readlink(dangling)}, which does not exist (or leads back "
            "to itself): make the folder it names, or name another destination"
        )
    above = _file_above(destination)
    if above is not None:
        raise BackupFailed(
            f"{above} is a file, not a folder, so no backup can go under it; name another destination"
        )
    if destination.resolve().is_relative_to(data_dir.resolve()):
        raise BackupFailed(f"{destination} is inside the data directory {data_dir}; name one outside it")
    _clear_abandoned(destination)
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise BackupFailed(f"{destination} already exists and is not an empty folder; name a new one")
    in_place = destination.is_dir()
    work = _work_folder(destination, in_place)
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        work.mkdir(mode=PRIVATE_FOLDER_MODE)
        with directory_locked(work, fcntl.LOCK_EX):
            database = snapshot_database(source, work / DB_FILENAME, busy_timeout_ms, stop)
            if (data_dir / NOTES_FOLDER).is_dir():
                copy_notes(data_dir / NOTES_FOLDER, work / NOTES_FOLDER)
            waiting = waiting_files(data_dir)
            for name in waiting:
                shutil.copy2(data_dir / name, work / name)
            if stop is not None and stop.is_set():
                raise CopyStopped(f"stopped before {destination} was in place")
            if in_place:
                _move_up(work, destination, [NOTES_FOLDER, *waiting, DB_FILENAME])
            else:
                work.rename(destination)
    except SnapshotFailed as exc:
        raise BackupFailed(str(exc)) from exc
    except sqlite3.DatabaseError as exc:
        raise open_failure(source, exc) from exc
    except OSError as exc:
        raise BackupFailed(f"cannot write {destination}: {exc.strerror or exc}") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Backup(destination, database, sum(1 for _ in (destination / NOTES_FOLDER).rglob("*.md")))


def _work_folder(destination: Path, in_place: bool) -> Path:
    """The hidden folder the backup is assembled in (`PARTIAL`)."""
    if in_place:
        return destination / f"{PARTIAL}{os.getpid()}"
    return destination.parent / f".{destination.name}{PARTIAL}{os.getpid()}"


def _move_up(work: Path, destination: Path, parts: list[str]) -> None:
    """Move the parts `work` holds into `destination`, the database last: a folder holding it is whole.
    Their names are written down first (`MOVED`)."""
    present = [part for part in parts if (work / part).exists()]
    (work / MOVED).write_text("".join(f"{part}\n" for part in present), encoding="utf-8")
    for part in present:
        (work / part).rename(destination / part)


def _clear_abandoned(destination: Path) -> None:
    """Remove what backups into `destination` that were killed left: their work folders (`PARTIAL`, no
    longer locked; those of backups still running stay) and, in a folder one of them was moving its
    parts into, the parts it had moved (`MOVED`) unless the database, which goes last, was among them
    (the backup is then whole)."""
    for folder in _work_folders(destination):
        try:
            with directory_locked(folder, fcntl.LOCK_EX):
                for part in _half_moved(folder, destination):
                    _remove(part)
                shutil.rmtree(folder, ignore_errors=True)
        except BlockingIOError:
            continue  # a backup running now


def _half_moved(folder: Path, destination: Path) -> list[Path]:
    """The parts the killed backup that left `folder` had moved into `destination`, when it had not moved
    them all: its database, the last one, is not there."""
    moved = folder / MOVED
    if folder.parent != destination or not moved.is_file() or (destination / DB_FILENAME).exists():
        return []
    names = moved.read_text(encoding="utf-8").splitlines()
    return [destination / name for name in names if name and Path(name).name == name]


def _work_folders(destination: Path) -> list[Path]:
    """The work folders of backups into `destination`, running or killed: inside it, and beside it."""
    inside = (destination, PARTIAL)
    beside = (destination.parent, f".{destination.name}{PARTIAL}")
    return [
        path
        for folder, prefix in (inside, beside)
        if folder.is_dir()
        for path in folder.iterdir()
        if path.name.startswith(prefix) and path.is_dir() and not path.is_symlink()
    ]


def _remove(path: Path) -> None:
    """Delete the file or folder at `path` (a link, not what it leads to)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
