"""Settings of the Telegram adapter (`[adapters.telegram]` in config.toml)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class TelegramConfig(BaseModel):
    """A bot token from @BotFather and how updates arrive.

    The bot reads every group message only with privacy mode off (BotFather: /setprivacy → Disable),
    or when it is a group admin; otherwise it sees commands, replies to it and @mentions only.
    """

    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, repr=False)
    mode: Literal["polling", "webhook"] = "polling"
    api_base: str | None = Field(
        default=None, description="A self-hosted Bot API server, e.g. http://127.0.0.1:8081"
    )
    polling_timeout: int = Field(default=10, ge=0, description="Long-poll seconds per getUpdates")
    drop_pending_updates: bool = False
    webhook_url: str | None = Field(default=None, description="Public https URL Telegram posts updates to")
    webhook_host: str = "127.0.0.1"
    webhook_port: int = Field(default=8443, ge=0, le=65535)
    webhook_path: str = "/telegram/webhook"
    follow_supergroup_upgrade: bool = Field(
        default=True,
        description="When a group becomes a supergroup (a new chat id), move its memory to the new chat",
    )
    webhook_secret: str | None = Field(
        default=None,
        repr=False,
        description="Checked in X-Telegram-Bot-Api-Secret-Token; None: a random one is made at each start",
    )

    @model_validator(mode="after")
    def _check(self) -> TelegramConfig:
        if self.mode == "webhook" and not self.webhook_url:
            raise ValueError("mode = 'webhook' needs webhook_url (the public https address of webhook_path)")
        if not self.webhook_path.startswith("/"):
            raise ValueError(f"webhook_path must start with '/', got {self.webhook_path!r}")
        return self
