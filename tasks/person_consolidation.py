"""The person consolidation daemon: facts from new messages into people's profiles, per chat."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from memory.persons.consolidate import JOB, ConsolidationReport, PersonConsolidator
from tasks.registry import JobSpec


def person_consolidation_job(consolidator: PersonConsolidator, interval: Callable[[], timedelta]) -> JobSpec:
    """A job running one bounded, resumable consolidation pass over every chat."""

    async def run(now: datetime) -> ConsolidationReport:
        return await consolidator.run(now)

    return JobSpec(JOB, interval, run)
