"""Reading an evaluation's data file: one that cannot be read, is not UTF-8 or is not JSON is a
`DataError` naming the file and what is wrong with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class DataError(ValueError):
    """An evaluation's data file is missing, unreadable or not in the expected shape."""


def read_json(path: Path) -> Any:
    """The JSON value `path` holds (UTF-8)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DataError(f"cannot read {path}: it is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"cannot read {path}: it is not valid JSON ({exc})") from None
