"""The typed settings tree. Every table of config.toml is a model here; unknown keys are errors."""

from __future__ import annotations

from itertools import pairwise
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.llm.settings import LLMSettings


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


class NotesSettings(Section):
    hints: int = Field(5, ge=0, le=50)
    hints_tokens: int = Field(80, ge=0, le=2000)


class JargonSettings(Section):
    """`[jargon]`: mining cadence, dictionary scope, inference thresholds, explanation budget."""

    enabled: bool = True
    cooldown_seconds: float = Field(20.0, ge=1.0, le=86_400.0)
    min_new_messages: int = Field(10, ge=1, le=10_000)
    history_messages: int = Field(3000, ge=10, le=100_000)
    max_window_messages: int = Field(500, ge=10, le=10_000)
    scope: Literal["global", "chat"] = "global"
    extractor: Literal["offline", "llm"] = "offline"
    thresholds: list[int] = Field(default_factory=lambda: [2, 4, 8, 12, 24, 60, 100], min_length=1)
    max_batch: int = Field(30, ge=1, le=1000)
    max_evidence: int = Field(20, ge=1, le=1000)
    inferences_per_run: int = Field(20, ge=0, le=1000)
    context_tokens: int = Field(200, ge=0, le=10_000)
    min_df: int = Field(3, ge=2, le=1000)
    min_speakers: int = Field(2, ge=1, le=100)
    min_lift: float = Field(11.0, ge=0.0, le=50.0)
    max_candidates: int = Field(20, ge=1, le=1000)

    @field_validator("thresholds")
    @classmethod
    def _increasing(cls, value: list[int]) -> list[int]:
        if any(t < 1 for t in value) or any(b <= a for a, b in pairwise(value)):
            raise ValueError("thresholds must be positive and strictly increasing")
        return value


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
    llm: LLMSettings = LLMSettings()
    notes: NotesSettings = NotesSettings()
    jargon: JargonSettings = JargonSettings()
    tools: ToolsSettings = ToolsSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    adapters: AdaptersSettings = AdaptersSettings()
    logging: LoggingSettings = LoggingSettings()
