"""`qunyi backup`: copy a data directory (the database and the notes) into a new folder that is itself a
data directory, while the bot keeps running."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from bot.llm.usage_spill import held_files
from bot.unrecorded import FILE_NAME as UNRECORDED
from memory.notes import NOTES_FOLDER
from memory.notes.snapshot import copy_notes
from memory.storage.database import DB_FILENAME, open_failure, require_database_file
from memory.storage.snapshot import CopyStopped, Snapshot, SnapshotFailed, snapshot_database


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
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise BackupFailed(f"{destination} already exists and is not an empty folder; name a new one")
    if destination.resolve().is_relative_to(data_dir.resolve()):
        raise BackupFailed(f"{destination} is inside the data directory {data_dir}; name one outside it")
    in_place = destination.is_dir()
    if in_place:
        work = destination / f".partial-{os.getpid()}"
    else:
        work = destination.parent / f".{destination.name}.partial-{os.getpid()}"
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        work.mkdir()
        database = snapshot_database(source, work / DB_FILENAME, busy_timeout_ms, stop)
        if (data_dir / NOTES_FOLDER).is_dir():
            copy_notes(data_dir / NOTES_FOLDER, work / NOTES_FOLDER)
        waiting = waiting_files(data_dir)
        for name in waiting:
            shutil.copy2(data_dir / name, work / name)
        if stop is not None and stop.is_set():
            raise CopyStopped(f"stopped before {destination} was in place")
        if in_place:
            # the database last: a folder holding it is whole
            for part in (NOTES_FOLDER, *waiting, DB_FILENAME):
                if (work / part).exists():
                    (work / part).rename(destination / part)
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
