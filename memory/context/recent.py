"""The short-term window: the last messages of the chat, rendered with speakers' names."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import tzinfo

from memory.context.builder import ContextRequest, ContextSection
from memory.context.render import fit_lines, neutralize, render_section
from memory.messages import StoredMessage
from memory.text import estimate_tokens

# (chat_id, person ids) → the names the bot uses for them in that chat (person_name).
SpeakerNames = Callable[[int, Sequence[int]], Awaitable[dict[int, str]]]
TITLE = "Recent messages"


def transcript_line(message: StoredMessage, speaker: str | None = None, zone: tzinfo | None = None) -> str:
    """One transcript line; `speaker` (the person_name) replaces the raw card/nickname when given.
    The time is shown in `zone` (by default the offset the message was stored with)."""
    stamp = message.time.astimezone(zone or message.time.tzinfo).strftime("%m-%d %H:%M")
    return f"[{stamp}] {speaker or message.speaker}: {message.text}"


def fitting_window(messages: Sequence[StoredMessage], budget_tokens: int) -> list[StoredMessage]:
    """The newest of `messages` (oldest first) whose lines a recent window of `budget_tokens` shows
    (the oldest of them perhaps cut), oldest first: recall may bring back the others."""
    lines = [neutralize(transcript_line(m)) for m in reversed(messages)]
    frame = estimate_tokens(render_section("recent", TITLE, []))
    shown = len(fit_lines(lines, budget_tokens - frame))
    return list(messages[len(messages) - shown :]) if shown else []


class RecentWindowProvider:
    """The recent window, newest kept first when the budget is short."""

    name = "recent"

    def __init__(self, budget_tokens: int, speaker_names: SpeakerNames | None = None) -> None:
        self.budget_tokens = budget_tokens
        self.speaker_names = speaker_names

    async def section(self, request: ContextRequest) -> ContextSection | None:
        if not request.recent:
            return None
        names: dict[int, str] = {}
        if self.speaker_names is not None:
            ids = list({m.person_id for m in request.recent if m.person_id is not None})
            names = await self.speaker_names(request.chat_id, ids)
        newest_first = [
            transcript_line(m, names.get(m.person_id) if m.person_id is not None else None, request.zone)
            for m in reversed(request.recent)
        ]
        return ContextSection(
            "recent", TITLE, newest_first, self.budget_tokens, priority=90, show_reversed=True
        )
