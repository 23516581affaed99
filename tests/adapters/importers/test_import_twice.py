"""Importing a file twice adds nothing: keys are stable, and unique within a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.importers import iter_import
from memory.types import ChatMessage

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "importers"
CASES = [
    ("telegram", "telegram_result.json"),
    ("telegram", "telegram_full_export.json"),
    ("discord", "discord_export.json"),
    ("qq", "qq_history.json"),
    ("qq", "qq_manager.txt"),
    ("replay", "replay.jsonl"),
]


class KeyedStore:
    """The write path's contract in miniature: idempotent on (platform, chat, message id)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, str], ChatMessage] = {}

    def add(self, items: object) -> int:
        added = 0
        for item in items:  # type: ignore[attr-defined]
            if isinstance(item, ChatMessage):
                key = (item.platform, item.chat_id, item.message_id)
                if key not in self.rows:
                    self.rows[key] = item
                    added += 1
        return added


@pytest.mark.parametrize(("fmt", "name"), CASES)
def test_importing_twice_adds_nothing(fmt: str, name: str) -> None:
    store = KeyedStore()
    first_pass = list(iter_import(fmt, FIXTURES / name))
    messages = [i for i in first_pass if isinstance(i, ChatMessage)]
    assert store.add(first_pass) == len(messages) > 0  # no two messages of one file share a key
    second_pass = list(iter_import(fmt, FIXTURES / name))
    assert store.add(second_pass) == 0
    assert [m for m in second_pass if isinstance(m, ChatMessage)] == messages  # same content, too
