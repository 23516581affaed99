"""The short-term window: the last messages of the chat, rendered with speakers' names."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import tzinfo

from memory.context.builder import ContextRequest, ContextSection
from memory.context.render import fit_lines, neutralize, render_section, stamped
from memory.messages import StoredMessage
from memory.text import estimate_tokens

# (chat_id, person ids) → the names the bot uses for them in that chat (person_name).
SpeakerNames = Callable[[int, Sequence[int]], Awaitable[dict[int, str]]]
TITLE = "Recent messages"


def transcript_line(
    message: StoredMessage, speaker: str | None = None, zone: tzinfo | None = None, stamp: str = "%m-%d %H:%M"
) -> str:
    """One transcript line; `speaker` (the person_name) replaces the raw card/nickname when given.
    The time is shown in `zone` (by default the offset the message was stored with) as `stamp`
    formats it, marked on the bot's own messages and on forwards (`stamped`)."""
    stamp = message.time.astimezone(zone or message.time.tzinfo).strftime(stamp)
    return f"{stamped(stamp, message.is_bot, message.forwarded)} {speaker or message.speaker}: {message.text}"


class RecentWindowProvider:
    """The recent window, newest kept first when the budget is short."""

    name = "recent"

    def __init__(self, budget_tokens: int, speaker_names: SpeakerNames | None = None) -> None:
        self.budget_tokens = budget_tokens
        self.speaker_names = speaker_names

    async def speakers(self, chat_id: int, messages: Sequence[StoredMessage]) -> list[str]:
        """The name each of `messages` shows its speaker under: the person_name the bot uses in the
        chat, else the raw card or nickname."""
        names: dict[int, str] = {}
        if self.speaker_names is not None:
            ids = list({m.person_id for m in messages if m.person_id is not None})
            names = await self.speaker_names(chat_id, ids)
        return [names.get(m.person_id, m.speaker) if m.person_id is not None else m.speaker for m in messages]

    async def lines(
        self, chat_id: int, messages: Sequence[StoredMessage], zone: tzinfo | None = None
    ) -> list[str]:
        """The transcript lines of `messages` (oldest first), newest first, with the names the bot
        uses for the speakers."""
        speakers = await self.speakers(chat_id, messages)
        return [transcript_line(m, s, zone) for m, s in zip(messages, speakers, strict=True)][::-1]

    async def fitting(
        self, chat_id: int, messages: Sequence[StoredMessage], zone: tzinfo | None = None
    ) -> list[StoredMessage]:
        """The newest of `messages` (oldest first) whose lines the window shows (the oldest of them
        perhaps cut), oldest first, measured on the very lines `section` renders: recall may bring
        back the others."""
        lines = [neutralize(line) for line in await self.lines(chat_id, messages, zone)]
        frame = estimate_tokens(render_section("recent", TITLE, []))
        shown = len(fit_lines(lines, self.budget_tokens - frame))
        return list(messages[len(messages) - shown :]) if shown else []

    async def section(self, request: ContextRequest) -> ContextSection | None:
        if not request.recent:
            return None
        newest_first = await self.lines(request.chat_id, request.recent, request.zone)
        return ContextSection(
            "recent", TITLE, newest_first, self.budget_tokens, priority=90, show_reversed=True, fit_first=True
        )
