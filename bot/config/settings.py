"""The typed settings tree. Every table of config.toml is a model here; unknown keys are errors."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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


class SchedulerSettings(Section):
    config_watch_seconds: float = Field(5.0, ge=0.0, le=3600.0)
    shutdown_grace_seconds: float = Field(10.0, ge=0.0, le=600.0)


class ConsoleSettings(Section):
    chat: str = Field("console", min_length=1)
    chat_name: str = "Console group"
    user: str = Field("me", min_length=1)


class AdaptersSettings(Section):
    console: ConsoleSettings = ConsoleSettings()


class PersonsSettings(Section):
    person_name_max_chars: int = Field(16, ge=2, le=64)
    alias_sources: list[Literal["nickname", "card", "self", "others", "llm", "admin"]] = [
        "nickname",
        "card",
        "self",
        "others",
    ]
    self_declared_rename: bool = True
    consolidation_interval_seconds: float = Field(300.0, ge=1.0, le=86_400.0)
    consolidation_batch: int = Field(500, ge=1, le=100_000)
    use_llm: bool = True
    forget_removes_messages: bool = False
    pronoun_max_age_seconds: float = Field(3600.0, ge=0.0, le=2_592_000.0)
    card_max_chars: int = Field(240, ge=20, le=4000)
    card_tokens: int = Field(400, ge=0, le=20_000)
    max_cards: int = Field(4, ge=0, le=20)
    mention_min_confidence: float = Field(0.6, ge=0.0, le=1.0)


class LoggingSettings(Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"


class Settings(Section):
    """The whole configuration."""

    storage: StorageSettings = StorageSettings()
    bot: BotSettings = BotSettings()
    reply: ReplySettings = ReplySettings()
    context: ContextSettings = ContextSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    adapters: AdaptersSettings = AdaptersSettings()
    persons: PersonsSettings = PersonsSettings()
    logging: LoggingSettings = LoggingSettings()
