"""Copying a notes base directory (every scope's folder) while notes are being written, for a backup."""

from __future__ import annotations

import os
import shutil
from contextlib import ExitStack
from pathlib import Path

from memory.notes.store import LOCK_FILE, folder_lock, is_temporary


def copy_notes(source: Path, target: Path) -> None:
    """Copy the notes under `source` to `target` (made; blocking). A notes folder is copied under its
    lock (`folder_lock`), as every note change is made: no note is caught half written or half renamed,
    and no write's temporary file is copied or vanishes mid-copy (which failed the whole copy). Lock and
    temporary files are left out; folders linked to are copied, as `shutil.copytree` does."""
    for folder, subfolders, _files in os.walk(source, followlinks=True):
        here = Path(folder)
        into = target / here.relative_to(source)
        subfolders.sort()
        with ExitStack() as held:
            try:  # a notes folder: its files change under its lock only
                held.enter_context(folder_lock(here, create=False))
            except FileNotFoundError:  # no lock file: no note was ever written here
                pass
            _copy_files(here, into)


def _copy_files(folder: Path, into: Path) -> None:
    """The files of `folder` (not its subfolders, which `os.walk` visits) copied into `into`."""

    def left_out(where: str, names: list[str]) -> list[str]:
        return [
            n for n in names if n == LOCK_FILE or is_temporary(n) or os.path.isdir(os.path.join(where, n))
        ]

    shutil.copytree(folder, into, ignore=left_out, dirs_exist_ok=True)
