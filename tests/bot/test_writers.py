"""`bot.writers` on a real data directory: writers share it, each named by its marker; compact has it
alone, and is named to the writers it refuses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.holder_file import DataDirTaken, Holder
from bot.pid_file import COMPACT, hold
from bot.writers import WritersRunning, excluding_writers, writers, writing


def test_writers_share_the_data_dir_and_keep_compact_out(tmp_path: Path) -> None:
    with writing(tmp_path, "web"), writing(tmp_path, "people edit"):
        assert writers(tmp_path) == [Holder(os.getpid(), "people edit"), Holder(os.getpid(), "web")]
        with pytest.raises(WritersRunning) as refused, excluding_writers(tmp_path):
            pass
        assert refused.value.writers == writers(tmp_path)
    assert writers(tmp_path) == []
    assert list(tmp_path.iterdir()) == [], "each marker is removed with its writer"
    with excluding_writers(tmp_path):
        pass


def test_compact_keeps_writers_out_and_is_named_to_them(tmp_path: Path) -> None:
    with hold(tmp_path, COMPACT), excluding_writers(tmp_path):
        with pytest.raises(DataDirTaken) as refused, writing(tmp_path, "web"):
            pass
        assert refused.value.holder == Holder(os.getpid(), COMPACT)
        assert writers(tmp_path) == [], "a refused writer leaves no marker"
    with excluding_writers(tmp_path):  # the pid file not taken (yet): compact, of no known pid
        with pytest.raises(DataDirTaken) as unnamed, writing(tmp_path, "web"):
            pass
        assert unnamed.value.holder == Holder(None, COMPACT)
    with writing(tmp_path, "web"):
        assert writers(tmp_path) == [Holder(os.getpid(), "web")]


def test_an_error_while_writing_is_not_taken_for_compact(tmp_path: Path) -> None:
    with pytest.raises(BlockingIOError), writing(tmp_path, "web"):
        raise BlockingIOError("a socket's, say")
    assert writers(tmp_path) == [] and list(tmp_path.iterdir()) == []
