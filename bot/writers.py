"""Who writes a data directory's database, so that `qunyi compact` and they exclude each other.

Every process that writes (the bot, `qunyi web`, `qunyi mcp --write`, `qunyi import`, `qunyi replay`,
each one-shot command that changes memory, a reader whose recall may ask the model, whose token usage
is a row, and a reader while it upgrades the schema) holds the data directory shared for as long as it
may write,
and `qunyi compact` holds it alone: a writer started while compact rewrites the database is refused at
once instead of waiting out the busy timeout and failing, and compact is refused while any writer runs.
The lock is a flock on the data directory itself, which is never removed: no lock file has to be made
or removed, so none is raced for (a shared lock file would be removed by its last holder, which must
first take it alone to know it is the last: a writer starting just then would take that for compact),
and the lock goes with the process, so a killed writer blocks nobody.
A lock shared by many does not say who holds it: each writer also holds a marker file
(`qunyi.writer-<pid>-<n>`, bot/holder_file.py) naming it, for compact to say what it waits for."""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

from bot.holder_file import DataDirTaken, Holder, directory_locked, file_holder, hold_file
from bot.pid_file import COMPACT, holder

MARKER_PREFIX = "qunyi.writer-"
_markers = itertools.count(1)  # a process may write one data directory through several databases


class WritersRunning(RuntimeError):
    """Processes are writing the data directory's database; `writers` names those that could be named
    (none when each is between taking the directory and naming itself)."""

    def __init__(self, data_dir: Path, writers: list[Holder]) -> None:
        names = ", ".join(f"{w.role} (pid {w.shown_pid})" for w in writers) or "unnamed"
        super().__init__(f"{data_dir} is being written by {names}")
        self.data_dir = data_dir
        self.writers = writers


@contextlib.contextmanager
def writing(data_dir: Path, role: str) -> Iterator[None]:
    """Hold `data_dir` for writing its database (beside other writers) for the block, named `role` (the
    command, such as `web`) in a marker file removed at the end.

    Raises DataDirTaken naming `qunyi compact` (by the pid file it holds) while it runs."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(directory_locked(data_dir, fcntl.LOCK_SH))
        except BlockingIOError:
            found = holder(data_dir)
            compact = found if found is not None and found.role == COMPACT else Holder(None, COMPACT)
            raise DataDirTaken(data_dir, compact) from None
        held.enter_context(hold_file(data_dir / f"{MARKER_PREFIX}{os.getpid()}-{next(_markers)}", role, ""))
        yield


@contextlib.contextmanager
def excluding_writers(data_dir: Path) -> Iterator[None]:
    """Hold `data_dir` alone, against every writer, for the block (`qunyi compact`, which holds the pid
    file as well: that names it to the writers it refuses).

    Raises WritersRunning when a writer holds it. The markers of writers that were killed are removed."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(directory_locked(data_dir, fcntl.LOCK_EX))
        except BlockingIOError:
            raise WritersRunning(data_dir, writers(data_dir)) from None
        for marker in data_dir.glob(f"{MARKER_PREFIX}*"):
            if file_holder(marker, "") is None:  # no writer can be taking one meanwhile
                marker.unlink(missing_ok=True)
        yield


def writers(data_dir: Path) -> list[Holder]:
    """The processes writing `data_dir`'s database now, as their markers name them, by pid."""
    found = (file_holder(marker, "") for marker in data_dir.glob(f"{MARKER_PREFIX}*"))
    return sorted((w for w in found if w is not None), key=lambda w: (w.pid or 0, w.role))
