"""Fixtures for the DB-backed people tests: a MemoryService with PersonMemory attached."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from memory.ingest import Recorded
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.service import MemoryService
from memory.storage import Database
from memory.types import ChatMessage
from tests.conftest import T0


async def count_rows(db: Database, model: type, **where: object) -> int:
    """Rows of `model` whose columns equal the given values."""
    async with db.read() as session:
        query = select(func.count()).select_from(model)
        for name, value in where.items():
            query = query.where(getattr(model, name) == value)
        return int((await session.execute(query)).scalar_one())


class Chat:
    """Writes messages into one test chat with increasing ids and times."""

    def __init__(self, memory: MemoryService, chat: str = "g1") -> None:
        self.memory = memory
        self.chat = chat
        self.n = 0

    async def say(
        self,
        sender: str,
        text: str,
        *,
        card: str = "",
        nickname: str | None = None,
        minutes: float | None = None,
        **extra: object,
    ) -> Recorded:
        self.n += 1
        message = ChatMessage(
            platform="test",
            chat_id=self.chat,
            message_id=f"{self.chat}-m{self.n}",
            sender_id=sender,
            sender_name=nickname if nickname is not None else f"nick-{sender}",
            sender_card=card,
            text=text,
            time=T0 + timedelta(minutes=self.n if minutes is None else minutes),
            **extra,  # type: ignore[arg-type]
        )
        return await self.memory.record(message)


@pytest.fixture
def persons_config() -> PersonsConfig:
    return PersonsConfig(use_llm=False)


@pytest.fixture
def people(memory: MemoryService, db: Database, persons_config: PersonsConfig) -> PersonMemory:
    persons = PersonMemory(db, lambda: persons_config)
    persons.attach(memory)
    return persons


@pytest.fixture
def chat(memory: MemoryService, people: PersonMemory) -> Callable[[str], Chat]:
    return lambda name="g1": Chat(memory, name)
