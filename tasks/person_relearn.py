"""The relearn job: messages a person consolidation read offline only get the person model's reading
once it answers (memory.persons.relearn), a few chunks per run, waiting longer after each run the
model failed. Every run removes the chunks with nothing left to read first, model or not, so they do not
pile up while no person model is set up."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory.offline_redo import RedoRun
from memory.persons.consolidate import LLM_TASK
from memory.persons.relearn import prune_unreadable, relearn_offline
from memory.persons.resolver import PersonResolver
from memory.ports import LLMPort
from memory.storage import Database
from tasks.offline_redo import OfflineRedoJob

JOB_NAME = "person_relearn"


@dataclass(frozen=True, slots=True)
class RelearnSettings:
    """What the job needs from `[persons]` (see config.toml): `enabled` is the person model's use at all
    (`use_llm`); `per_run` (`relearn_per_run`) 0 turns relearning off; `interval` is consolidation's."""

    enabled: bool = False
    per_run: int = 5
    interval: timedelta = timedelta(minutes=5)


class PersonRelearnJob(OfflineRedoJob[RelearnSettings]):
    """The relearn job over `db`, reading names with `resolver`."""

    def __init__(
        self,
        db: Database,
        resolver: PersonResolver,
        settings: Callable[[], RelearnSettings],
        llm: LLMPort | None,
    ) -> None:
        async def redo(model: LLMPort, now: RelearnSettings, at: datetime) -> RedoRun:
            return await relearn_offline(db, resolver, model, now.per_run, at)

        super().__init__(JOB_NAME, LLM_TASK, settings, llm, redo)
        self.db = db

    async def run(self, now: datetime) -> RedoRun:
        """Remove the chunks none of whose messages can be read any more (no model needed), then relearn
        as every redo job does (nothing without the person model in use and available)."""
        await prune_unreadable(self.db)
        return await super().run(now)
