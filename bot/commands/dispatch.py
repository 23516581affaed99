"""Parsing `/recall …`, `/who …`, `/what …` in chat and answering them offline."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.commands import answers
from memory.service import MemoryService

USAGE = "用法: /recall <关键词> · /who <名字> · /what <词>"


async def dispatch(memory: MemoryService, chat_id: int, text: str) -> answers.Answer | None:
    """The answer for a memory command, or None when the text is not one."""
    stripped = text.strip()
    if not stripped.startswith(("/", "／")):
        return None
    name, _, argument = stripped[1:].partition(" ")
    argument = argument.strip()
    handlers: dict[str, Callable[[MemoryService, int, str], Awaitable[answers.Answer]]] = {
        "recall": answers.recall,
        "who": answers.who,
        "what": answers.what,
    }
    handler = handlers.get(name.lower())
    if handler is None:
        return None
    if not argument:
        return answers.Answer({"error": "missing argument"}, [USAGE])
    return await handler(memory, chat_id, argument)
