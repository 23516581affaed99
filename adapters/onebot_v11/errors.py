"""Errors raised by the OneBot v11 adapter's action calls."""

from __future__ import annotations

from typing import Any

from adapters.base import SendError


class OneBotError(SendError):
    """Base of every OneBot action error; a `SendError` so callers of `send_text` need catch only that."""


class NotConnected(OneBotError):
    """No live OneBot connection (for that self id) to send the action through."""


class ActionTimeout(OneBotError):
    """The implementation did not answer an action (matched by `echo`) within the timeout."""


class ActionFailed(OneBotError):
    """The implementation answered an action with `status: failed` (or a non-zero retcode)."""

    def __init__(self, action: str, response: dict[str, Any]) -> None:
        self.action = action
        self.retcode = response.get("retcode")
        self.wording = str(response.get("wording") or response.get("message") or response.get("msg") or "")
        self.response = response
        super().__init__(f"OneBot action {action!r} failed: retcode={self.retcode} {self.wording}".rstrip())
