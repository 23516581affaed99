"""Settings of the web playground adapter (`[adapters.playground]` in config.toml)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory.local_access import refuse_remote

DEFAULT_MAX_NAME_CHARS = 32


class PlaygroundConfig(BaseModel):
    """A page in the browser to chat with the bot as any member, in any chat; loopback only unless
    `allow_remote`, and every API call needs the access token."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=8766, ge=0, le=65_535, description="0: any free port")
    token: str = Field(default="", repr=False, description="Empty: a random one is made at each start")
    allow_remote: bool = False
    keep_messages: int = Field(default=200, ge=1, le=10_000, description="Transcript kept per chat")
    max_chats: int = Field(
        default=50, ge=1, le=10_000, description="Chats kept; the longest idle one is dropped first"
    )
    max_body_bytes: int = Field(default=16_384, ge=1_024, le=1_048_576, description="Largest post")
    max_name_chars: int = Field(
        default=DEFAULT_MAX_NAME_CHARS,
        ge=1,
        le=256,
        description="A longer user name is refused (400), never cut",
    )

    @model_validator(mode="after")
    def _loopback(self) -> PlaygroundConfig:
        refuse_remote(
            self.host,
            self.allow_remote,
            server="the playground",
            setting="[adapters.playground] allow_remote",
        )
        return self
