"""Optional platform libraries, imported only when their adapter is used."""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtra(ImportError):
    """An adapter's library is not installed; the message names the pip extra that installs it."""


def require(module: str, extra: str) -> ModuleType:
    """Import `module`, or raise `MissingExtra` saying `pip install 'qunyi[<extra>]'`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(
            f"the {extra} adapter needs the {module!r} package: pip install 'qunyi[{extra}]'"
        ) from exc
