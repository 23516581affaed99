"""`<data_dir>/qunyi.pid`: the process that has a data directory to itself, a running bot (alone or
inside another program, bot.plugin) or `qunyi compact`, holds it locked with its pid (and, but for a
bot on its own, its role) in it (a bot/holder_file.py file)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bot.holder_file import DataDirTaken, Holder, file_holder, hold_file

PID_FILE = "qunyi.pid"
BOT = "bot"
PLUGIN = "plugin"  # a bot inside another program (bot.plugin): never signalled
COMPACT = "compact"

__all__ = [
    "BOT",
    "COMPACT",
    "PID_FILE",
    "PLUGIN",
    "DataDirTaken",
    "Holder",
    "hold",
    "holder",
    "refuse_running_bot",
    "running_bot",
]


@contextmanager
def hold(data_dir: Path, role: str = BOT) -> Iterator[None]:
    """Hold `data_dir`'s pid file (locked, our pid in it; a bot writes its pid alone, as it always has,
    another holder (`qunyi compact`, a bot inside another program) its pid and its role) for the block;
    removed at the end.

    Raises DataDirTaken, leaving the file as it is, when another process holds it. The lock goes with
    the process, so the file of one that was killed does not block the next."""
    with hold_file(data_dir / PID_FILE, role, BOT):
        yield


def holder(data_dir: Path) -> Holder | None:
    """Who holds `data_dir` now, or None when nobody does (a pid file a killed process left names
    nobody)."""
    return file_holder(data_dir / PID_FILE, BOT)


def running_bot(data_dir: Path) -> int | None:
    """The pid of the bot running on `data_dir`, or None when none is."""
    found = holder(data_dir)
    return found.pid if found is not None and found.role == BOT else None


def refuse_running_bot(data_dir: Path) -> None:
    """Raise DataDirTaken naming the bot running on `data_dir` (alone or inside another program), if
    one is."""
    found = holder(data_dir)
    if found is not None and found.role in (BOT, PLUGIN):
        raise DataDirTaken(data_dir, found)
