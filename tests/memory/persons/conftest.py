from datetime import UTC, datetime

import pytest

from memory.persons.speech import Utterance

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def say():
    """Build an Utterance from the speaker "me" with a fresh message key."""
    counter = iter(range(1, 10_000))

    def make(text: str, *, speaker: str = "me", when: datetime = T0, **kwargs) -> Utterance:
        return Utterance(f"msg-{next(counter)}", speaker, text, when, **kwargs)

    return make


# DB-backed people fixtures (PersonMemory attached to a MemoryService, a chat writer).
from tests.memory.persons.people_fixtures import chat  # noqa: E402, F401
