"""Shared fixtures: a real SQLite database in a temporary folder, message factories, `fake_llm`, a
fake OpenAI-compatible server on loopback, and `database_locked`, another process's writer."""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import settings

from memory.clock import ManualClock
from memory.service import MemoryService
from memory.storage import Database
from memory.types import ChatMessage
from tests.fakes.openai_server import FakeOpenAI

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

# Property tests run the same examples every time, untimed, and write no example database into the
# tree. QUNYI_HYPOTHESIS_EXAMPLES raises the number of examples for a longer hunt.
settings.register_profile(
    "qunyi",
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    max_examples=int(os.environ.get("QUNYI_HYPOTHESIS_EXAMPLES", "100")),
)
settings.load_profile("qunyi")


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


async def chat_ids(memory: MemoryService, *keys: str) -> list[int]:
    """The database ids of the test chats `keys` (chat ids of `make_message`)."""
    found = [await memory.chat("test", key) for key in keys]
    assert all(chat is not None for chat in found), keys
    return [chat.id for chat in found if chat is not None]


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


@contextmanager
def database_locked(path: Path) -> Iterator[None]:
    """Another process's writer holding the database file at `path` until the block ends."""
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port another program listens on, for a server that must fail to start there."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]
