"""`<data_dir>/qunyi.pid`: the process that has a data directory to itself, a running bot or `qunyi
compact`, holds it locked with its pid (and, for compact, its name) in it."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

PID_FILE = "qunyi.pid"
BOT = "bot"
COMPACT = "compact"


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a data directory: its pid (None when the file does not say) and what it is (BOT or
    COMPACT)."""

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


def _holder(handle: IO[str]) -> Holder:
    """What the file says: a bot writes its pid alone (as it always has), another holder its pid and
    its role."""
    handle.seek(0)
    words = handle.read().split()
    pid = int(words[0]) if words and words[0].isdecimal() else None
    return Holder(pid, words[1] if len(words) > 1 else BOT)


@contextlib.contextmanager
def hold(data_dir: Path, role: str = BOT) -> Iterator[None]:
    """Hold `data_dir`'s pid file (locked, our pid in it) for the block; removed at the end.

    Raises DataDirTaken, leaving the file as it is, when another process holds it. The lock goes with
    the process, so the file of one that was killed does not block the next."""
    path = data_dir / PID_FILE
    handle = _locked(data_dir, path)
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()) if role == BOT else f"{os.getpid()} {role}")
        handle.flush()
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    finally:
        handle.close()


def _locked(data_dir: Path, path: Path) -> IO[str]:
    """The pid file, opened and locked. A holder that stops removes its file before it lets the lock go:
    a file opened before that and locked after is no longer the one at `path` (another process would
    make and lock a new one), so it is let go and the one at `path` taken instead."""
    while True:
        handle = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            found = _holder(handle)
            handle.close()
            raise DataDirTaken(data_dir, found) from None
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


def holder(data_dir: Path) -> Holder | None:
    """Who holds `data_dir` now, or None when nobody does.

    The pid file alone does not tell: a process that was killed leaves it behind, and its number may
    since have gone to another process. Only a file still locked by `hold` names a holder."""
    try:
        handle = (data_dir / PID_FILE).open("r", encoding="utf-8")
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(handle)
        fcntl.flock(handle, fcntl.LOCK_UN)
        return None


def running_bot(data_dir: Path) -> int | None:
    """The pid of the bot running on `data_dir`, or None when none is."""
    found = holder(data_dir)
    return found.pid if found is not None and found.role == BOT else None
