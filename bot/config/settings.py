"""The typed settings tree. Every table of config.toml is a model here; unknown keys are errors."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.llm.settings import LLMSettings
from memory.recall.settings import RecallSettings as _RecallDefaults
from memory.recall.settings import RecallWeights as _WeightDefaults

_W = _WeightDefaults()
_R = _RecallDefaults()


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StorageSettings(Section):
    data_dir: str = "data"
    busy_timeout_ms: int = Field(10_000, ge=100, le=600_000)


class BotSettings(Section):
    name: str = Field("群忆", min_length=1)
    self_id: str = Field("bot", min_length=1)
    aliases: list[str] = ["群忆", "qunyi"]


class ReplySettings(Section):
    enabled: bool = True
    on_mention: bool = True
    on_reply: bool = True
    on_name: bool = True
    keywords: list[str] = []
    probability: float = Field(0.0, ge=0.0, le=1.0)
    disabled_chats: list[str] = []
    commands: bool = True


class ContextSettings(Section):
    total_tokens: int = Field(2000, ge=200, le=200_000)
    recent_messages: int = Field(20, ge=0, le=500)
    recent_tokens: int = Field(800, ge=0, le=100_000)
    recall_tokens: int = Field(600, ge=0, le=100_000)
    recall_limit: int = Field(8, ge=0, le=100)


class RecallWeightsSettings(Section):
    """Fusion, signal and salience weights of recall (a signal multiplies by 1 + weight × strength)."""

    rrf_k: float = Field(_W.rrf_k, gt=0.0, le=1000.0)
    lexical: float = Field(_W.lexical, ge=0.0, le=10.0)
    dense: float = Field(_W.dense, ge=0.0, le=10.0)
    history: float = Field(_W.history, ge=0.0, le=10.0)
    preference: float = Field(_W.preference, ge=0.0, le=10.0)
    time_window: float = Field(_W.time_window, ge=0.0, le=10.0)
    person_fill: float = Field(_W.person_fill, ge=0.0, le=10.0)
    feedback: float = Field(_W.feedback, ge=0.0, le=10.0)
    feedback_docs: int = Field(_W.feedback_docs, ge=2, le=100)
    feedback_terms: int = Field(_W.feedback_terms, ge=0, le=50)
    context_spread: float = Field(_W.context_spread, ge=0.0, le=1.0)
    keyword_overlap: float = Field(_W.keyword_overlap, ge=0.0, le=10.0)
    quoted_phrase: float = Field(_W.quoted_phrase, ge=0.0, le=10.0)
    person: float = Field(_W.person, ge=0.0, le=10.0)
    time: float = Field(_W.time, ge=0.0, le=10.0)
    reinforcement: float = Field(_W.reinforcement, ge=0.0, le=10.0)
    recency_half_life_days: float = Field(_W.recency_half_life_days, ge=0.0, le=36500.0)
    recency_floor: float = Field(_W.recency_floor, ge=0.0, le=1.0)


class RecallSettings(Section):
    """Scope, embedder and ranking of the one recall used by replies, /recall and the eval."""

    scope: Literal["chat", "global"] = "chat"
    global_blacklist: list[str] = []
    per_person_cross_chat: list[str] = []
    embedder: Literal["none", "local", "openai"] = "none"
    model: str = ""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    embed_timeout_seconds: float = Field(30.0, gt=0.0, le=600.0)
    query_embed_timeout_seconds: float = Field(2.0, gt=0.0, le=60.0)
    backfill_interval_seconds: float = Field(60.0, ge=1.0, le=86_400.0)
    backfill_batch: int = Field(256, ge=1, le=10_000)
    candidates: int = Field(_R.candidates, ge=10, le=5000)
    fusion: Literal["rrf", "score"] = _R.fusion
    stems: bool = True
    rerank: bool = False
    rerank_top: int = Field(20, ge=2, le=100)
    weights: RecallWeightsSettings = RecallWeightsSettings()


class NotesSettings(Section):
    hints: int = Field(5, ge=0, le=50)
    hints_tokens: int = Field(80, ge=0, le=2000)


class ToolsSettings(Section):
    enabled: bool = True
    max_rounds: int = Field(3, ge=0, le=10)
    time_limit_seconds: float = Field(30.0, gt=0.0, le=600.0)
    call_time_limit_seconds: float = Field(10.0, gt=0.0, le=120.0)


class SchedulerSettings(Section):
    config_watch_seconds: float = Field(5.0, ge=0.0, le=3600.0)
    shutdown_grace_seconds: float = Field(10.0, ge=0.0, le=600.0)


class ConsoleSettings(Section):
    chat: str = Field("console", min_length=1)
    chat_name: str = "Console group"
    user: str = Field("me", min_length=1)


class AdaptersSettings(Section):
    console: ConsoleSettings = ConsoleSettings()


class LoggingSettings(Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class Settings(Section):
    """The whole configuration."""

    storage: StorageSettings = StorageSettings()
    bot: BotSettings = BotSettings()
    reply: ReplySettings = ReplySettings()
    context: ContextSettings = ContextSettings()
    recall: RecallSettings = RecallSettings()
    llm: LLMSettings = LLMSettings()
    notes: NotesSettings = NotesSettings()
    tools: ToolsSettings = ToolsSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    adapters: AdaptersSettings = AdaptersSettings()
    logging: LoggingSettings = LoggingSettings()
