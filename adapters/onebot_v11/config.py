"""Settings of the OneBot v11 adapter (`[adapters.onebot_v11]` in config.toml)."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory.local_access import is_loopback


class OneBotConfig(BaseModel):
    """How Qunyi talks to a OneBot v11 implementation such as NapCat.

    `reverse` (the usual NapCat set-up): Qunyi is the WebSocket server at `ws://host:port/path` and the
    implementation dials in with `Authorization: Bearer <access_token>` and `X-Self-ID: <bot QQ>`.
    `forward`: Qunyi dials the implementation's WebSocket server at `forward_url` and reconnects with
    exponential backoff when the connection drops.
    """

    model_config = ConfigDict(extra="forbid")

    mode: Literal["reverse", "forward"] = "reverse"
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    path: str = "/onebot/v11/ws"
    access_token: str | None = Field(default=None, repr=False)
    forward_url: str | None = None
    self_id: str | None = Field(default=None, description="Bot QQ to send through when several connect")
    stale_timeout: float = Field(
        default=90.0, gt=0, description="Seconds without any frame before a connection is closed as stale"
    )
    action_timeout: float = Field(default=30.0, gt=0)
    reply_lookup_timeout: float = Field(default=5.0, gt=0, description="Timeout of get_msg for reply targets")
    resolve_replies: bool = True
    reconnect_initial: float = Field(default=1.0, gt=0)
    reconnect_max: float = Field(default=60.0, gt=0)
    reconnect_factor: float = Field(default=2.0, ge=1.0)
    max_message_bytes: int = Field(default=16 * 1024 * 1024, gt=0)

    @model_validator(mode="after")
    def _check(self) -> OneBotConfig:
        if not self.path.startswith("/"):
            raise ValueError(f"path must start with '/', got {self.path!r}")
        if self.mode == "forward" and not self.forward_url:
            raise ValueError("mode = 'forward' needs forward_url (e.g. ws://127.0.0.1:3001)")
        if self.forward_url and not _dialable(self.forward_url):
            # "127.0.0.1:3001" (the address NapCat's page shows) was dialled for ever, each failure
            # logged as the address alone
            example = "ws://127.0.0.1:3001"
            raise ValueError(
                f"forward_url must be a WebSocket address such as {example}, got {self.forward_url!r}"
            )
        if self.reconnect_max < self.reconnect_initial:
            raise ValueError("reconnect_max must be at least reconnect_initial")
        if self.access_token == "":
            self.access_token = None
        if self.mode == "reverse" and self.access_token is None and not is_loopback(self.host):
            # Anyone reaching the port could connect as a bot account: post messages as any member of
            # any group, and read the bot's answers (a /recall of any group's memory).
            raise ValueError(
                f"host {self.host!r} is not a loopback address: set access_token (the token NapCat sends), "
                "or anyone who can reach the port can pose as the bot's QQ account and read its memory"
            )
        return self


def _dialable(url: str) -> bool:
    """Whether `url` names a WebSocket server to dial: ws:// or wss:// (http:// and https:// are
    upgraded too) with a host."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # raises ValueError for a port that is no number or out of range
    except ValueError:
        return False
    return parts.scheme.lower() in ("ws", "wss", "http", "https") and bool(parts.hostname)
