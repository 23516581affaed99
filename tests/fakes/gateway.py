"""The real LLM gateway pointed at the fake OpenAI-compatible server, for tests of one task's model path."""

from __future__ import annotations

from bot.llm import Budget, LLMSettings, build_gateway
from bot.llm.gateway import LLMGateway
from memory.clock import ManualClock
from memory.storage import Database
from tests.fakes.openai_server import FakeOpenAI


def fake_gateway(fake: FakeOpenAI, db: Database, clock: ManualClock, task: str, **budget: int) -> LLMGateway:
    """A gateway on `fake` that never retries nor waits; `budget` (e.g. tokens_per_hour=100) caps `task`."""
    settings = LLMSettings(
        enabled=True,
        base_url=fake.base_url,
        model="fake",
        max_retries=0,
        backoff_seconds=0,
        budgets={task: Budget(**budget)} if budget else {},
    )
    return build_gateway(settings, db, clock)
