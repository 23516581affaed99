"""What every live platform adapter offers the bot: an inbound feed and one outbound seam."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable

from memory.types import ChatKind, ChatMessage

MessageHandler = Callable[[ChatMessage], Awaitable[None]]


class SendError(RuntimeError):
    """The platform refused or failed to deliver an outgoing message."""


class Adapter(ABC):
    """A live connection to one platform.

    `start` begins delivering incoming messages to `handler` and returns once running;
    `send_text` is the only way out and returns the bot's own message as the platform stored it,
    so the caller can record it (platforms often do not echo the bot's messages).
    """

    platform: str

    @abstractmethod
    async def start(self, handler: MessageHandler) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    @abstractmethod
    async def send_text(
        self,
        chat_id: str,
        text: str,
        *,
        chat_kind: ChatKind = ChatKind.GROUP,
        reply_to: str | None = None,
    ) -> ChatMessage: ...
