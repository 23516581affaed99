"""Replacing a file's text so that no reader, crash, full disk or Ctrl-C ever leaves it half-written."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

TEMP_PREFIX, TEMP_SUFFIX = ".tmp-", ".part"  # a file being written, renamed to its name when whole


def write_atomically(path: Path, text: str, *, prefix: str = TEMP_PREFIX, suffix: str = TEMP_SUFFIX) -> None:
    """Replace `path` with `text` (UTF-8, line ends as given): written to a temporary file beside it
    (`prefix`…`suffix`), fsynced, then renamed over it, so `path` holds either its old text or all
    the new one; a file that was there keeps its permissions. What is no regular file (a device such
    as /dev/stdout, a pipe) is written to directly: it cannot be half-written, and is never replaced."""
    if path.exists() and not path.is_file():
        with path.open("w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.is_file():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
