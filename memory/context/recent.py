"""The short-term window: the last messages of the chat, rendered with speakers' names."""

from __future__ import annotations

from memory.context.builder import ContextRequest, ContextSection
from memory.messages import StoredMessage


def transcript_line(message: StoredMessage) -> str:
    stamp = message.time.strftime("%m-%d %H:%M")
    return f"[{stamp}] {message.speaker}: {message.text}"


class RecentWindowProvider:
    """The recent window, newest kept first when the budget is short."""

    name = "recent"

    def __init__(self, budget_tokens: int) -> None:
        self.budget_tokens = budget_tokens

    async def section(self, request: ContextRequest) -> ContextSection | None:
        if not request.recent:
            return None
        newest_first = [transcript_line(m) for m in reversed(request.recent)]
        return ContextSection(
            "recent", "Recent messages", newest_first, self.budget_tokens, priority=90, show_reversed=True
        )
