"""The composition root: settings → database → memory service → LLM → jobs → reply pipeline."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from bot.config import ConfigStore, Settings
from bot.history_setup import register_history_jobs
from bot.llm import LLMGateway, build_gateway
from bot.private_chat_notes import move_renamed_private_chat_notes
from bot.reply.pipeline import ReplyPipeline
from memory.chat_merge import finish_notes_moves
from memory.clock import Clock, SystemClock
from memory.context.jargon_provider import JargonProvider
from memory.context.notes_provider import NoteHintsProvider
from memory.context.recall_provider import RecallProvider
from memory.embeddings import EmbedderConfig, make_embedder
from memory.jargon.discovery import DiscoveryParams
from memory.jargon.explain import JargonExplainer
from memory.jargon.filters import FilterParams
from memory.notes import NOTES_FOLDER, NoteScopes
from memory.persons.config import PersonsConfig
from memory.persons.names import prepare as prepare_names
from memory.persons.service import PersonMemory
from memory.recall import RecallSettings, RecallWeights, ScopePolicy
from memory.recall.glossary import JargonGlossary
from memory.recall.setup import attach_recall
from memory.service import ContextSettings, MemoryService
from memory.storage import Database
from memory.text import prepare as prepare_text
from tasks import JobRunner, JobSpec
from tasks.embedding_backfill import embedding_backfill_job
from tasks.fts_reindex import fts_reindex_job
from tasks.jargon_mining import JargonMiningJob, MiningSettings
from tasks.person_consolidation import person_consolidation_job
from tasks.person_relearn import PersonRelearnJob, RelearnSettings

log = logging.getLogger(__name__)

WATCH_OFF_SECONDS = 60.0  # the config watch job's turn while `config_watch_seconds = 0` (it does nothing)


# Settings a running bot reads once at start: a reload that changes them says a restart is needed.
RESTART_ONLY = (
    "storage",
    "adapters",
    "recall.embedder",
    "recall.model",
    "recall.base_url",
    "recall.api_key_env",
    "recall.embed_timeout_seconds",
)


# Libraries that log at INFO what happens every few seconds: APScheduler every run of every job,
# httpx (under the openai client, which may bring its own copy, `httpx2`) every request to the model.
# Those lines would bury the console adapter's chat and every real message in the log.
CHATTY_LOGGERS = ("apscheduler", "httpx", "httpx2")


def set_log_level(level: str) -> None:
    """Apply `[logging] level`; the CHATTY_LOGGERS speak from WARNING up unless the level is DEBUG."""
    logging.getLogger().setLevel(level)
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if level == "DEBUG" else logging.WARNING)


def load_text_tables() -> None:
    """jieba's dictionary and tags and pypinyin's tables (a second or two): loaded before the first
    message rather than inside it, on the loop."""
    prepare_text()
    prepare_names()


def resolve_data_dir(settings: Settings, override: Path | None) -> Path:
    return override if override is not None else Path(settings.storage.data_dir)


def _setting(settings: Settings, dotted: str) -> object:
    value: object = settings
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def restart_needed(started: Settings, new: Settings, extra: tuple[str, ...] = ()) -> list[str]:
    """The RESTART_ONLY settings (and the `extra` dotted names) that differ between `started` (those
    the bot started with, still in force for these) and `new`."""
    return [name for name in (*RESTART_ONLY, *extra) if _setting(started, name) != _setting(new, name)]


@dataclass(slots=True)
class App:
    """Everything a running Qunyi holds."""

    config: ConfigStore
    data_dir: Path
    clock: Clock
    db: Database
    memory: MemoryService
    runner: JobRunner
    pipeline: ReplyPipeline
    llm: LLMGateway
    persons: PersonMemory | None = None
    started: Settings | None = None  # the settings at build time; None: those in force

    @property
    def settings(self) -> Settings:
        return self.config.current

    def restart_pending(self, *extra: str) -> list[str]:
        """The start-only settings (RESTART_ONLY and `extra`) a reload changed since the app was built:
        for these the values of the start stay in force until a restart."""
        return restart_needed(self.started or self.settings, self.settings, extra)

    async def close(self) -> None:
        await self.runner.shutdown(timedelta(seconds=self.settings.scheduler.shutdown_grace_seconds))
        await self.llm.close()
        await self.db.close()


def _context_settings(settings: Settings) -> ContextSettings:
    c = settings.context
    return ContextSettings(
        total_tokens=c.total_tokens,
        recent_messages=c.recent_messages,
        recent_tokens=c.recent_tokens,
        timezone=settings.bot.timezone,
    )


def recall_asks_model(settings: Settings) -> bool:
    """Whether a recall may ask the model (`[recall] rerank` with the LLM on): its token usage is then
    written to the database, even by a command that only reads memory."""
    return settings.recall.rerank and settings.llm.enabled


def recall_settings(settings: Settings) -> RecallSettings:
    """The `[recall]` table as the plain values memory/ takes."""
    r = settings.recall
    return RecallSettings(
        candidates=r.candidates,
        fusion=r.fusion,
        stems=r.stems,
        rerank=r.rerank,
        rerank_top=r.rerank_top,
        rerank_timeout_seconds=r.rerank_timeout_seconds,
        query_embed_timeout_seconds=r.query_embed_timeout_seconds,
        weights=RecallWeights(**r.weights.model_dump()),
        timezone=settings.bot.timezone,
        numeric_date_order=r.numeric_date_order,
    )


def recall_scope(settings: Settings) -> ScopePolicy:
    r = settings.recall
    return ScopePolicy(r.scope, tuple(r.global_blacklist), tuple(r.per_person_cross_chat), r.global_private)


def embedder_config(settings: Settings) -> EmbedderConfig:
    r = settings.recall
    return EmbedderConfig(r.embedder, r.model, r.base_url, r.api_key_env, r.embed_timeout_seconds)


def embedding_model(settings: Settings) -> str | None:
    """The model name the configured embedder stores its vectors under (nothing is loaded or
    contacted); None for embedder "none"."""
    embedder = make_embedder(embedder_config(settings))
    return None if embedder is None else embedder.model


def _configure_recall_context(memory: MemoryService, settings: Settings) -> None:
    for provider in memory.context_providers:
        if isinstance(provider, RecallProvider):
            provider.budget_tokens = settings.context.recall_tokens
            provider.limit = settings.context.recall_limit


def _persons_config(settings: Settings) -> PersonsConfig:
    p = settings.persons
    return PersonsConfig(
        person_name_max_chars=p.person_name_max_chars,
        alias_sources=tuple(p.alias_sources),
        self_declared_rename=p.self_declared_rename,
        consolidation_batch=p.consolidation_batch,
        use_llm=p.use_llm,
        forget_removes_messages=p.forget_removes_messages,
        pronoun_max_age_seconds=p.pronoun_max_age_seconds,
        card_max_chars=p.card_max_chars,
        card_tokens=p.card_tokens,
        max_cards=p.max_cards,
        mention_min_confidence=p.mention_min_confidence,
    )


def relearn_settings(settings: Settings) -> RelearnSettings:
    """The person relearn job's settings from `[persons]` (at consolidation's interval)."""
    p = settings.persons
    return RelearnSettings(
        enabled=p.use_llm,
        per_run=p.relearn_per_run,
        interval=timedelta(seconds=p.consolidation_interval_seconds),
    )


def mining_settings(settings: Settings) -> MiningSettings:
    """The jargon job's settings from `[jargon]`."""
    j = settings.jargon
    discovery = DiscoveryParams(
        min_df=j.min_df,
        min_speakers=j.min_speakers,
        min_lift=j.min_lift,
        max_candidates=j.max_candidates,
        filters=FilterParams(max_batch=j.max_batch),
    )
    return MiningSettings(
        enabled=j.enabled,
        cooldown_seconds=j.cooldown_seconds,
        min_new_messages=j.min_new_messages,
        history_messages=j.history_messages,
        max_window_messages=j.max_window_messages,
        scope=j.scope,
        thresholds=tuple(j.thresholds),
        extractor=j.extractor,
        max_evidence=j.max_evidence,
        inferences_per_run=j.inferences_per_run,
        discovery=discovery,
        privacy=recall_scope(settings),
    )


async def settle_notes_folders(db: Database, notes: NoteScopes) -> None:
    """Move the notes folders whose chats are known under another key now: the renamed QQ private
    chats', and those of merged chats whose merge was killed before it moved them."""
    await move_renamed_private_chat_notes(db, notes)
    await finish_notes_moves(db, notes)


def _seconds_of(clock: Clock) -> Callable[[], float]:
    return lambda: clock.now().timestamp()


async def build_app(
    config: ConfigStore,
    data_dir: Path | None = None,
    clock: Clock | None = None,
    watch_config: bool = True,
    create: bool = True,
    *,
    upgrade: bool = True,
    lock: AbstractContextManager[object] | None = None,
    upgrade_lock: AbstractContextManager[object] | None = None,
) -> App:
    """Open the database (migrating it; creating it only with `create`) and wire every part from the
    settings in force. Without `upgrade` (a dry run) opening changes nothing: the schema is not
    upgraded (an old one raises DatabaseBehind) and no notes folder is moved. `lock` is held while the
    database is open, `upgrade_lock` while opening changes it (Database.open). Raises DatabaseMissing /
    DatabaseUnavailable (memory.storage) when it cannot."""
    settings = config.current
    # The members' command limit counts on the monotonic clock, or on the simulated one given (a replay
    # counts commands in the log's time, not in how fast it runs).
    seconds = time.monotonic if clock is None else _seconds_of(clock)
    clock = clock or SystemClock()
    directory = resolve_data_dir(settings, data_dir)
    db = await Database.open(
        directory,
        settings.storage.busy_timeout_ms,
        create=create,
        upgrade=upgrade,
        lock=lock,
        upgrade_lock=upgrade_lock,
    )
    notes = NoteScopes(directory / NOTES_FOLDER)
    if upgrade:
        await settle_notes_folders(db, notes)
    memory = MemoryService(db, clock, _context_settings(settings), notes=notes)
    note_hints = NoteHintsProvider(notes, memory.chat_key, settings.notes.hints, settings.notes.hints_tokens)
    memory.context_providers.append(note_hints)
    llm = build_gateway(settings.llm, db, clock)
    embedder = make_embedder(embedder_config(settings))
    explainer = JargonExplainer(db)
    memory.chat_caches.append(explainer)
    recaller = attach_recall(
        memory, recall_settings(settings), embedder, llm=llm, glossary=JargonGlossary(explainer)
    )
    recaller.scope = recall_scope(settings)
    _configure_recall_context(memory, settings)
    runner = JobRunner(clock)
    runner.register(fts_reindex_job(db))
    if embedder is not None:
        runner.register(
            embedding_backfill_job(
                db,
                embedder,
                lambda: timedelta(seconds=config.current.recall.backfill_interval_seconds),
                lambda: config.current.recall.backfill_batch,
            )
        )
    jargon_provider = JargonProvider(explainer, settings.jargon.context_tokens)
    memory.context_providers.append(jargon_provider)
    runner.register(JargonMiningJob(db, lambda: mining_settings(config.current), llm).spec())
    pipeline = ReplyPipeline(memory, lambda: config.current, llm, seconds=seconds)
    persons = PersonMemory(db, lambda: _persons_config(config.current), llm)
    persons.attach(memory)
    runner.register(
        person_consolidation_job(
            persons.consolidator,
            lambda: timedelta(seconds=config.current.persons.consolidation_interval_seconds),
        )
    )
    runner.register(
        PersonRelearnJob(db, persons.resolver, lambda: relearn_settings(config.current), llm).spec()
    )
    app = App(config, directory, clock, db, memory, runner, pipeline, llm, persons, started=settings)

    def on_reload(old: Settings, new: Settings) -> None:
        memory.context_settings = _context_settings(new)
        note_hints.count = new.notes.hints
        note_hints.budget_tokens = new.notes.hints_tokens
        recaller.settings = recall_settings(new)
        recaller.scope = recall_scope(new)
        _configure_recall_context(memory, new)
        llm.reconfigure(new.llm)
        jargon_provider.budget_tokens = new.jargon.context_tokens
        runner.reschedule()
        if new.logging.level != old.logging.level:
            set_log_level(new.logging.level)
        if changed := app.restart_pending():
            log.warning("config reloaded, but %s take effect only after a restart", ", ".join(changed))

    config.subscribe(on_reload)
    register_history_jobs(runner, db, lambda: config.current, llm)
    if watch_config and config.path is not None:

        async def reload_config(_now: object) -> None:
            if config.current.scheduler.config_watch_seconds > 0:
                config.reload_if_changed()

        def watch_interval() -> timedelta:  # when off, a reload (SIGHUP) may still turn it back on
            return timedelta(seconds=config.current.scheduler.config_watch_seconds or WATCH_OFF_SECONDS)

        runner.register(JobSpec("config_watch", watch_interval, reload_config))
    return app
