"""A job whose write meets a database another process holds after the model answered: the turn fails
with nothing written and the cursor where it was, and the next turn does the work again (the model
asked again), whole and once."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from memory.clock import ManualClock
from memory.models import JobState, PersonFact
from memory.persons.config import PersonsConfig
from memory.persons.consolidate import JOB
from memory.persons.service import PersonMemory
from memory.service import MemoryService
from memory.storage import Database
from tasks import JobRunner
from tasks.person_consolidation import person_consolidation_job
from tests.conftest import make_message
from tests.fakes.openai_server import Behaviour, FakeOpenAI, answer_json
from tests.memory.test_deletion_races import model


async def _done(db: Database) -> tuple[list[tuple[str, str, int | None]], int | None]:
    """The facts found and the job's cursor."""
    async with db.read() as session:
        facts = (await session.execute(select(PersonFact.key, PersonFact.value, PersonFact.message_id))).all()
        cursor = await session.scalar(select(JobState.cursor).where(JobState.job == JOB))
    return [(key, value, message) for key, value, message in facts], cursor


async def test_consolidation_whose_write_meets_a_lock_after_the_model_answered_is_done_again(
    memory: MemoryService, tmp_path: Path, fake_llm: FakeOpenAI, clock: ManualClock
) -> None:
    await memory.record_many([make_message(1, text="我住在杭州"), make_message(2, text="大家好")])
    impatient = await Database.open(tmp_path / "data", busy_timeout_ms=100)
    holder = sqlite3.connect(memory.db.path, isolation_level=None)

    def lock_then_answer(_body: dict[str, Any]) -> Behaviour:
        if len(fake_llm.chat_requests) == 1:
            holder.execute("BEGIN IMMEDIATE")  # another process starts writing as the model answers
        return answer_json({"facts": [], "events": []})

    fake_llm.default = lock_then_answer
    try:
        async with model(fake_llm, memory, clock) as llm:
            people = PersonMemory(impatient, lambda: PersonsConfig(use_llm=True), llm)
            runner = JobRunner(clock)
            runner.register(person_consolidation_job(people.consolidator, lambda: timedelta(minutes=5)))
            await runner.run_job(JOB)
            assert runner.failures[JOB] == 1 and len(fake_llm.chat_requests) == 1
            assert await _done(memory.db) == ([], None), "nothing written, the cursor where it was"
            holder.execute("ROLLBACK")
            await runner.run_job(JOB)
    finally:
        holder.close()
        await impatient.close()
    assert runner.failures[JOB] == 1 and len(fake_llm.chat_requests) == 2, "the model asked again"
    assert await _done(memory.db) == ([("location", "杭州", 1)], 2), "the work done once"
