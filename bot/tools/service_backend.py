"""`MemoryTools` over the real MemoryService: recalled memories as the reply context shows them, and
the same answers as /who and /what."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from bot.commands import answers
from memory.context.recall_provider import memory_line
from memory.context.render import neutralize
from memory.service import MemoryService
from memory.text import truncate


def _lines(lines: Iterable[str]) -> str:
    """`lines`, a line break inside one (a member's message) continuing it indented, as in the reply
    context: a message cannot add a forged line to the answer."""
    return "\n".join(neutralize(line) for line in lines)


class ServiceMemoryTools:
    """Answers the model's memory look-ups for a chat given by its `platform:id` key. Recalled memories
    come as the reply context shows them (`memory_line`: the bot's own messages marked as its own).

    With `reinforce` false nothing is written: recalled topics are not counted as recalled again.
    `counted` holds the topics already reinforced in this exchange (the reply context's): each topic
    counts at most once however many recalls show it. `asker` is the person the bot is answering, for
    the chats `[recall] per_person_cross_chat` opens to them."""

    def __init__(
        self,
        memory: MemoryService,
        *,
        reinforce: bool = True,
        counted: set[int] | None = None,
        asker: int | None = None,
    ) -> None:
        self.memory = memory
        self.reinforce = reinforce
        self.counted = counted
        self.asker = asker

    async def _chat_id(self, chat: str) -> int | None:
        found = await self.memory.find_chat(chat)
        return None if found is None else found.id

    async def recall(self, chat: str, query: str, limit: int) -> str:
        chat_id = await self._chat_id(chat)
        if chat_id is None:
            return ""
        hits = await answers.recalled(
            self.memory,
            chat_id,
            query,
            limit,
            reinforce_shown=self.reinforce,
            counted=self.counted,
            asker=self.asker,
        )
        zone = self.memory.context_zone()
        return _lines(
            memory_line(replace(hit, text=truncate(hit.text, answers.MAX_ITEM_CHARS)), zone) for hit in hits
        )

    async def person(self, chat: str, name: str) -> str:
        chat_id = await self._chat_id(chat)
        return "" if chat_id is None else _lines((await answers.who(self.memory, chat_id, name)).lines)

    async def jargon(self, chat: str, term: str) -> str:
        chat_id = await self._chat_id(chat)
        return "" if chat_id is None else _lines((await answers.what(self.memory, chat_id, term)).lines)
