"""Shared fixtures: a real SQLite database in a temporary folder, message factories, and `fake_llm`,
a fake OpenAI-compatible server on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.clock import ManualClock
from memory.service import MemoryService
from memory.storage import Database
from memory.types import ChatMessage
from tests.fakes.openai_server import FakeOpenAI

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def make_message(
    n: int, chat: str = "g1", sender: str = "u1", text: str | None = None, **extra: object
) -> ChatMessage:
    """A test message; message ids and times follow `n`."""
    fields: dict[str, object] = {
        "platform": "test",
        "chat_id": chat,
        "message_id": f"m{n}",
        "sender_id": sender,
        "sender_name": f"name-{sender}",
        "text": text if text is not None else f"message {n}",
        "time": T0 + timedelta(minutes=n),
    }
    fields.update(extra)
    return ChatMessage(**fields)  # type: ignore[arg-type]


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "data")
    yield database
    await database.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def memory(db: Database, clock: ManualClock) -> MemoryService:
    return MemoryService(db, clock)


@pytest.fixture
async def fake_llm() -> AsyncIterator[FakeOpenAI]:
    """A started FakeOpenAI; point clients at `fake_llm.base_url`."""
    async with FakeOpenAI() as server:
        yield server
