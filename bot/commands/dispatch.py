"""Answering `/recall …`, `/who …`, `/what …` in chat, offline."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.commands import answers
from memory import commands
from memory.service import MemoryService

# /recall also needs the asker (see `answer`); these two answer from the chat alone.
Handler = Callable[[MemoryService, int, str], Awaitable[answers.Answer]]
HANDLERS: dict[str, Handler] = {"who": answers.who, "what": answers.what}


def command_for(text: str, *, to_bot: bool = False) -> commands.MemoryCommand | None:
    """The memory command `text` holds for this bot, or None when it holds none for it.

    A command addressed by a mention or an @suffix is this bot's only when the message is addressed to
    it (`to_bot`); `/recall@other_bot …` belongs to another bot.
    """
    command = commands.parse(text)
    if command is None or (command.addressed and not to_bot):
        return None
    return command


async def answer(
    memory: MemoryService, chat_id: int, command: commands.MemoryCommand, *, asker: int | None = None
) -> answers.Answer:
    """The answer to `command` in `chat_id`; `asker` (the sender's person id) decides which chats
    `/recall` may read."""
    if not command.argument:
        words = await answers.words_for(memory, chat_id, command.argument)
        return answers.Answer({"error": "missing argument"}, [words.usage])
    if command.name == "recall":
        return await answers.recall(memory, chat_id, command.argument, asker=asker)
    return await HANDLERS[command.name](memory, chat_id, command.argument)
