"""Fixtures shared by the memory tests: people memory attached to the test MemoryService."""

from tests.memory.persons.people_fixtures import people, persons_config  # noqa: F401
