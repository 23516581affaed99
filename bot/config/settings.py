"""The typed settings tree. Every table of config.toml is a model here; unknown keys are errors."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from adapters.discord.config import DiscordConfig
from adapters.onebot_v11.config import OneBotConfig
from adapters.telegram.config import TelegramConfig
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


AdapterName = Literal["console", "onebot_v11", "telegram", "discord"]


class AdaptersSettings(Section):
    enabled: list[AdapterName] = ["console"]
    console: ConsoleSettings = ConsoleSettings()
    onebot_v11: OneBotConfig = OneBotConfig()
    telegram: TelegramConfig | None = None
    discord: DiscordConfig | None = None

    @model_validator(mode="after")
    def _configured(self) -> AdaptersSettings:
        for name in ("telegram", "discord"):
            if name in self.enabled and getattr(self, name) is None:
                raise ValueError(
                    f"adapter {name!r} is enabled but [adapters.{name}] (with its token) is missing"
                )
        return self


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
    tools: ToolsSettings = ToolsSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    adapters: AdaptersSettings = AdaptersSettings()
    logging: LoggingSettings = LoggingSettings()
