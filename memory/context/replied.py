"""The message the one answered replies to: what "这个是什么意思" or "对，就是这家" is about, however
long ago it was said (a platform's reply is often to a message far out of the recent window)."""

from __future__ import annotations

from memory.context.builder import ContextRequest, ContextSection
from memory.context.recent import RecentWindowProvider, transcript_line

BUDGET_TOKENS = 150  # the line is cut (between whole characters) past this
PRIORITY = 40  # after the people and slang, before recalled memories
TITLE = "The message answered is a reply to"


class RepliedProvider:
    """One line: the replied-to message of the chat, dated in full and headed by the name the recent
    window uses for its speaker. Recall leaves it out (`RecallProvider`), so it is not shown twice."""

    name = "replied"

    def __init__(self, recent: RecentWindowProvider) -> None:
        self.recent = recent

    async def section(self, request: ContextRequest) -> ContextSection | None:
        target = request.replied
        if target is None:
            return None
        [speaker] = await self.recent.speakers(request.chat_id, [target])
        line = transcript_line(target, speaker, request.zone, stamp="%Y-%m-%d %H:%M")
        return ContextSection(self.name, TITLE, [line], BUDGET_TOKENS, PRIORITY)
