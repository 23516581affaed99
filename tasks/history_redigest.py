"""The re-digest job: topics packed offline get the summary model's digest once it answers
(memory.history.redigest), a few per run, waiting longer after each run the model failed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory.history.digest import KeywordMethod
from memory.history.redigest import TASK, redigest_offline
from memory.offline_redo import RedoRun
from memory.ports import LLMPort
from memory.storage import Database
from tasks.offline_redo import OfflineRedoJob

JOB_NAME = "history_redigest"


@dataclass(frozen=True, slots=True)
class RedigestSettings:
    """What the job needs from `[topics]` (see config.toml): `enabled` is the summary model's use at
    all (`llm_summary`); `per_run` 0 turns re-digesting off."""

    enabled: bool = False
    per_run: int = 5
    interval: timedelta = timedelta(minutes=5)
    keyword_method: KeywordMethod = "tfidf"


class HistoryRedigestJob(OfflineRedoJob[RedigestSettings]):
    """The re-digest job over `db`."""

    def __init__(self, db: Database, settings: Callable[[], RedigestSettings], llm: LLMPort | None) -> None:
        async def redo(model: LLMPort, now: RedigestSettings, _at: datetime) -> RedoRun:
            return await redigest_offline(db, model, now.per_run, now.keyword_method)

        super().__init__(JOB_NAME, TASK, settings, llm, redo)
