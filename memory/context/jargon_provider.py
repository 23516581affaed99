"""Jargon explanations: `term: meaning` for every known group term in the recent messages, those of
the message answered (and of the one it replies to) first, then those of the newest messages: the
section is cut from its end. A meaning a member gave in chat is marked as theirs."""

from __future__ import annotations

from memory.context.builder import ContextRequest, ContextSection
from memory.jargon.dictionary import MEMBER
from memory.jargon.explain import JargonExplainer

# A meaning a member gave in chat is their word, not the dictionary's: the model is told so.
_SAID_BY = {False: "", True: " (as a member explained it)"}


class JargonProvider:
    """A compact section explaining the jargon the recent window (and the message answered) uses."""

    name = "jargon"

    def __init__(self, explainer: JargonExplainer, budget_tokens: int, priority: int = 30) -> None:
        self.explainer = explainer
        self.budget_tokens = budget_tokens
        self.priority = priority

    async def section(self, request: ContextRequest) -> ContextSection | None:
        if self.budget_tokens <= 0:
            return None
        asked = [m.text for m in (request.message, request.replied) if m is not None]
        texts = [*asked, *(m.text for m in reversed(request.recent) if not m.is_bot)]
        found = await self.explainer.explain(request.chat_id, texts)
        if not found:
            return None
        lines = [f"{item.term}: {item.meaning}{_SAID_BY[item.provenance == MEMBER]}" for item in found]
        return ContextSection(
            "jargon",
            "Group slang in these messages (term: meaning)",
            lines,
            self.budget_tokens,
            self.priority,
        )
