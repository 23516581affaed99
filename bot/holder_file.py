"""A file one process at a time holds in a data directory, locked (flock) with the holder's pid and role
in it: `qunyi.pid` (bot/pid_file.py) and the marker of each process writing the database
(bot/writers.py). Who holds one can be read while it is held; it is removed when its holder lets it go,
and the lock goes with the process, so the file of one that was killed blocks nobody."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a data directory (or a part of it): its pid (None when its file does not say) and
    what it is (a role such as `bot` or `compact`, or the command writing, such as `web`)."""

    pid: int | None
    role: str

    @property
    def shown_pid(self) -> str:
        """The pid as messages show it: `?` when the file does not say."""
        return "?" if self.pid is None else str(self.pid)


class DataDirTaken(RuntimeError):
    """Another process holds the data directory."""

    def __init__(self, data_dir: Path, holder: Holder) -> None:
        super().__init__(f"{data_dir} is held by {holder.role} (pid {holder.pid})")
        self.data_dir = data_dir
        self.holder = holder


def _holder(handle: IO[str], alone: str) -> Holder:
    """What the file says: its holder's pid and role; a pid alone is a holder of role `alone`."""
    handle.seek(0)
    words = handle.read().split()
    pid = int(words[0]) if words and words[0].isdecimal() else None
    return Holder(pid, " ".join(words[1:]) or alone)


@contextlib.contextmanager
def hold_file(path: Path, role: str, alone: str) -> Iterator[None]:
    """Hold the file at `path` (locked, our pid and `role` in it; our pid alone when `role` is `alone`)
    for the block; removed at the end.

    Raises DataDirTaken, leaving the file as it is, when another process holds it."""
    handle = _locked(path, alone)
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()) if role == alone else f"{os.getpid()} {role}")
        handle.flush()
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    finally:
        handle.close()


def _locked(path: Path, alone: str) -> IO[str]:
    """The file, opened and locked. A holder that stops removes its file before it lets the lock go:
    a file opened before that and locked after is no longer the one at `path` (another process would
    make and lock a new one), so it is let go and the one at `path` taken instead."""
    while True:
        handle = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            found = _holder(handle, alone)
            handle.close()
            raise DataDirTaken(path.parent, found) from None
        if _is_at(handle, path):
            return handle
        handle.close()


def _is_at(handle: IO[str], path: Path) -> bool:
    """Whether the open file `handle` is still the one at `path` (not removed, nor replaced)."""
    try:
        here = path.stat()
    except FileNotFoundError:
        return False
    mine = os.fstat(handle.fileno())
    return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)


@contextlib.contextmanager
def directory_locked(folder: Path, operation: int) -> Iterator[None]:
    """`folder` flocked with `operation` (LOCK_SH or LOCK_EX) for the block; BlockingIOError when a
    lock of the other kind, or another LOCK_EX, is held on it. The lock goes with the process."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def file_holder(path: Path, alone: str) -> Holder | None:
    """Who holds the file at `path` now, or None when nobody does.

    The file alone does not tell: a process that was killed leaves it behind, and its number may since
    have gone to another process. Only a file still locked by `hold_file` names a holder."""
    try:
        handle = path.open("r", encoding="utf-8")
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(handle, alone)
        fcntl.flock(handle, fcntl.LOCK_UN)
        return None
