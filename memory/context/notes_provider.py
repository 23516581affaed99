"""Note hints: the names of the chat's weightiest notes, so the model knows what it wrote down."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from memory.context.builder import ContextRequest, ContextSection
from memory.notes import NoteScopes

ChatKeyOf = Callable[[int], Awaitable[str | None]]


class NoteHintsProvider:
    """A one-line section listing the top notes of the chat's scope by weight."""

    name = "notes"

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
        if not hints:
            return None
        line = " ".join(f"[[{hint.name}]]" for hint in hints)
        return ContextSection(
            "notes", "Your notes on this chat (open with note_get)", [line], self.budget_tokens, 70
        )
