"""Settings of the Discord adapter (`[adapters.discord]` in config.toml)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DiscordConfig(BaseModel):
    """A bot token from the Developer Portal. The bot needs the privileged Message Content intent
    (Bot → Privileged Gateway Intents) to read what members write; without it `content` is empty.
    With `members_intent` it also asks for the privileged Server Members intent, which tells it of
    members leaving, removed from and joining a server; without it only bans are told."""

    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, repr=False)
    ready_timeout: float = Field(default=60.0, gt=0, description="Seconds to wait for login and READY")
    members_intent: bool = Field(
        default=False,
        description="Ask for the privileged Server Members intent (enable it in the Developer Portal "
        "first, or Discord refuses the connection): members leaving, removed and joining a server",
    )
