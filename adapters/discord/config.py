"""Settings of the Discord adapter (`[adapters.discord]` in config.toml)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DiscordConfig(BaseModel):
    """A bot token from the Developer Portal. The bot needs the privileged Message Content intent
    (Bot → Privileged Gateway Intents) to read what members write; without it `content` is empty."""

    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, repr=False)
    ready_timeout: float = Field(default=60.0, gt=0, description="Seconds to wait for login and READY")
