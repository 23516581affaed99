"""Note hints: the names of the chat's weightiest notes, so the model knows what it wrote down."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from memory.context.builder import ContextRequest, ContextSection
from memory.context.render import neutralize, render_section
from memory.notes import NoteScopes
from memory.text import estimate_tokens

ChatKeyOf = Callable[[int], Awaitable[str | None]]
NAME = "notes"
TITLE = "Your notes on this chat (open with note_get)"


class NoteHintsProvider:
    """A one-line section listing the top notes of the chat's scope by weight."""

    name = NAME

    def __init__(self, scopes: NoteScopes, chat_key_of: ChatKeyOf, count: int, budget_tokens: int) -> None:
        self.scopes = scopes
        self.chat_key_of = chat_key_of
        self.count = count
        self.budget_tokens = budget_tokens

    async def section(self, request: ContextRequest) -> ContextSection | None:
        if self.count <= 0:
            return None
        key = await self.chat_key_of(request.chat_id)
        if key is None:
            return None
        hints = await self.scopes.for_chat(key).hints(self.count)
        line = fit_links([hint.name for hint in hints], self.budget_tokens)
        if not line:
            return None
        return ContextSection(NAME, TITLE, [line], self.budget_tokens, 70)


def fit_links(names: list[str], budget_tokens: int) -> str:
    """`[[name]]` links for the leading `names` whose line fits the section budget whole: a link cut
    in the middle would name a note that does not exist."""
    room = budget_tokens - estimate_tokens(render_section(NAME, TITLE, [])) - 1  # as fit_lines counts
    line = ""
    for name in names:
        longer = f"{line} [[{name}]]".lstrip()
        if estimate_tokens(neutralize(longer)) > room:
            break
        line = longer
    return line
