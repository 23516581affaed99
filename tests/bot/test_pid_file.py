"""`bot.pid_file` on a real data directory: one holder at a time, also when a holder stops while the
next one is taking the file."""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path
from typing import IO, Any

import pytest

from bot import holder_file, pid_file
from bot.pid_file import BOT, COMPACT, DataDirTaken, hold, holder


def test_a_holder_stopping_between_the_next_ones_open_and_lock_leaves_one_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compact ends (removing its file, then letting its lock go) just after a bot opened the file and
    just before it locked it: the bot locked a file no longer there, so `holder` found nobody and a
    second process took the data directory as well."""
    compacting = contextlib.ExitStack()
    compacting.enter_context(hold(tmp_path, COMPACT))
    real_flock = fcntl.flock
    calls = 0

    def flock_after_compact_ends(handle: IO[Any], operation: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            compacting.close()
        real_flock(handle, operation)

    monkeypatch.setattr(holder_file.fcntl, "flock", flock_after_compact_ends)
    with hold(tmp_path, BOT):
        monkeypatch.setattr(holder_file.fcntl, "flock", real_flock)
        found = holder(tmp_path)
        assert found is not None and found.role == BOT
        with pytest.raises(DataDirTaken), hold(tmp_path, COMPACT):
            pass
    assert calls == 2, "the file compact removed was let go and the new one locked"
    assert holder(tmp_path) is None
    assert not (tmp_path / pid_file.PID_FILE).exists()
