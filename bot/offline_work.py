"""The work background jobs left for a model while it was down, over budget or not set up (topics packed
offline, people's messages read offline only, jargon terms due for inference), and the full-text rows
still to re-index after a tokenizer change (which wait for no model), counted for `qunyi doctor` and
the web console's overview, with why a job cannot do it when it cannot."""

from __future__ import annotations

from dataclasses import dataclass

from bot.app import App
from memory.history import redigest
from memory.history.redigest import TASK as SUMMARY_TASK
from memory.jargon import dictionary
from memory.jargon.inference import TASK as JARGON_TASK
from memory.persons import relearn
from memory.persons.consolidate import LLM_TASK as PERSON_TASK
from memory.reindex import rows_left
from tasks.fts_reindex import JOB_NAME as REINDEX_JOB
from tasks.history_redigest import JOB_NAME as REDIGEST_JOB
from tasks.jargon_mining import JOB_NAME as JARGON_JOB
from tasks.person_relearn import JOB_NAME as RELEARN_JOB

REINDEX_FTS = "full-text rows indexed by an older tokenizer, to re-index"


@dataclass(frozen=True, slots=True)
class WaitingWork:
    """One kind of work waiting for a model: how much, how much of it the model was asked about and
    answered unusably (None where nothing is marked so), and why its job cannot do it (None: it can)."""

    what: str
    job: str
    waiting: int
    tried: int | None
    blocked: str | None
    # Blocked by a setting while the model is meant to be used (a per-run count of 0, no model or endpoint
    # for the task): worth a warning. A feature, the LLM or the task turned off, or a spent budget is not.
    misconfigured: bool = False

    def text(self) -> str:
        """`what` with its counts and, when work waits, why it is stuck."""
        tried = f" ({self.tried:,} tried)" if self.tried else ""
        stuck = f" — {self.job} cannot do it: {self.blocked}" if self.waiting and self.blocked else ""
        return f"{self.what} {self.waiting:,}{tried}{stuck}"


def _blocked(
    app: App, feature_off: str | None, per_run: tuple[str, int], task: str
) -> tuple[str | None, bool]:
    """Why a job cannot do its offline work, the first of: its feature off, its per-run count 0, its
    model unavailable; and whether that is a misconfiguration (see `WaitingWork.misconfigured`)."""
    if feature_off:
        return feature_off, False
    key, count = per_run
    if count <= 0:
        return f"{key} = 0", True
    reason = app.llm.unavailable_reason(task)
    if reason is None:
        return None, False
    return f"the {task} model: {reason}", app.llm.missing_settings(task)


def _off(on: bool, key: str) -> str | None:
    return None if on else f"{key} = false"


async def waiting_work(app: App) -> list[WaitingWork]:
    """Each kind of offline work, counted in one read of the database; the re-index only while it is
    pending (a database of this version's tokens has none, ever)."""
    settings = app.settings
    topics, persons, jargon = settings.topics, settings.persons, settings.jargon
    async with app.db.read() as session:
        topic_counts = await redigest.waiting(session)
        chunk_counts = await relearn.waiting(session)
        terms = await dictionary.count_due_for_inference(session, jargon.thresholds)
        unindexed = await rows_left(session)
    # As `history_setup.redigest_settings` switches the job: topics on and llm_summary on.
    topics_off = _off(topics.enabled, "[topics] enabled") or _off(topics.llm_summary, "[topics] llm_summary")
    kinds: list[tuple[str, str, tuple[int, int | None], str | None, str, int, str]] = [
        ("topics packed offline, to re-digest", REDIGEST_JOB, topic_counts, topics_off,
         "[topics] redigest_per_run", topics.redigest_per_run, SUMMARY_TASK),
        ("people's message chunks read offline, to relearn", RELEARN_JOB, chunk_counts,
         _off(persons.use_llm, "[persons] use_llm"), "[persons] relearn_per_run", persons.relearn_per_run,
         PERSON_TASK),
        ("jargon terms due for inference", JARGON_JOB, (terms, None),
         _off(jargon.enabled, "[jargon] enabled"), "[jargon] inferences_per_run", jargon.inferences_per_run,
         JARGON_TASK),
    ]  # fmt: skip
    work = [
        WaitingWork(what, job, waiting, tried, *_blocked(app, off, (key, per_run), task))
        for what, job, (waiting, tried), off, key, per_run, task in kinds
    ]
    if unindexed:
        work.append(WaitingWork(REINDEX_FTS, REINDEX_JOB, unindexed, None, None))
    return work
