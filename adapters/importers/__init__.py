"""Chat-export importers: pure parsers from a file to `ChatMessage`s and `ImportIssue`s.

Every importer is `iter_messages(path, **options) -> Iterator[ChatMessage | ImportIssue]`, in file order.
Nothing is skipped silently: a broken entry yields an `ImportIssue` (kind MALFORMED) with its location,
a well-formed non-message (a join, a pin, an empty message) one of kind SKIPPED. A file that cannot be
read as the format at all raises `ImportFileError`. Message ids are the platform's own (or, for the QQ
text export, derived from the content), so writing them idempotently on (chat, message id) makes a
second import add nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapters.importers import discord_exporter, qq_export, replay_jsonl, telegram_export
from adapters.importers.base import (
    ImportFileError,
    ImportIssue,
    ImportItem,
    IssueKind,
    MessageIterator,
    Progress,
)

FORMATS: dict[str, Callable[..., MessageIterator]] = {
    "telegram": telegram_export.iter_messages,
    "discord": discord_exporter.iter_messages,
    "qq": qq_export.iter_messages,
    "replay": replay_jsonl.iter_messages,
}


def iter_import(fmt: str, path: str | Path, **options: Any) -> MessageIterator:
    """Run the importer for `fmt` (one of `FORMATS`) on `path` with its keyword options."""
    try:
        importer = FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown import format {fmt!r}; known: {', '.join(FORMATS)}") from None
    return importer(path, **options)


__all__ = [
    "FORMATS",
    "ImportFileError",
    "ImportIssue",
    "ImportItem",
    "IssueKind",
    "MessageIterator",
    "Progress",
    "iter_import",
]
