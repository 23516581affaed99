"""Reading an evaluation's data files: one that cannot be read, is not UTF-8 or is not JSON is a
`DataError` naming the file and what is wrong with it. Every evaluation (locomo, jargon, disentangle)
raises this one `DataError` for its data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class DataError(ValueError):
    """An evaluation's data file is missing, unreadable or not in the expected shape."""


def read_text(path: Path, *, undecodable: str = "strict") -> str:
    """The text `path` holds (UTF-8); `undecodable="replace"` reads a byte that is no UTF-8 as U+FFFD
    instead of refusing the file."""
    try:
        return path.read_text(encoding="utf-8", errors=undecodable)
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DataError(f"cannot read {path}: it is not UTF-8 text") from None


def read_json(path: Path) -> Any:
    """The JSON value `path` holds (UTF-8)."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"cannot read {path}: it is not valid JSON ({exc})") from None
