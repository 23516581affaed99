"""The recalled-memories section of the reply context: hybrid recall on the message being answered,
minus what the recent window already shows (also as a copy merged into a recalled duplicate).
Each line names its memory (`keys`), so that the ChatHistory rows the context really shows, after
the budgets, are the ones reinforced (`MemoryService.context_for_reply`)."""

from __future__ import annotations

from datetime import tzinfo

from memory.context.builder import ContextRequest, ContextSection
from memory.context.render import stamped
from memory.history.terms import clean
from memory.recall.pipeline import Recaller
from memory.recall.query import RecallHit, RecallQuery

PRIORITY = 60


def memory_line(hit: RecallHit, zone: tzinfo | None = None) -> str:
    """One recalled memory as a context line, with the speaker's alias and the date (in `zone`, by
    default the offset the memory carries), marked on the bot's own messages and on forwards
    (`stamped`)."""
    when = hit.time.astimezone(zone or hit.time.tzinfo)
    if hit.kind == "history":
        who = f" ({hit.speaker})" if hit.speaker else ""
        return f"[topic {when:%Y-%m-%d}] {hit.theme}{who}: {hit.text}"
    return f"{stamped(f'{when:%Y-%m-%d %H:%M}', hit.is_bot, hit.forwarded)} {hit.speaker}: {hit.text}"


class RecallProvider:
    """Recalled memories for the reply, each section line one memory, best first."""

    name = "recall"

    def __init__(self, recaller: Recaller, budget_tokens: int, limit: int) -> None:
        self.recaller = recaller
        self.budget_tokens = budget_tokens
        self.limit = limit

    async def section(self, request: ContextRequest) -> ContextSection | None:
        # A placeholder ([图片], [捂脸]), an @ or a link alone says nothing to search for: its "matches"
        # would be lines that merely sat next to other images.
        if self.limit <= 0 or self.budget_tokens <= 0 or not clean(request.query).strip():
            return None
        shown = {m.id for m in (*request.recent, request.message, request.replied) if m is not None}
        asker = request.message.person_id if request.message is not None else None
        chat_ids = await self.recaller.chats_for(request.chat_id, asker)
        query = RecallQuery(request.query, chat_ids, request.now, limit=self.limit + len(shown))
        hits = [
            hit
            for hit in await self.recaller.recall(query)
            if not (hit.kind == "message" and shown.intersection((hit.id, *hit.duplicates)))
        ][: self.limit]
        if not hits:
            return None
        return ContextSection(
            "recall",
            "Recalled memories",
            [memory_line(hit, request.zone) for hit in hits],
            self.budget_tokens,
            PRIORITY,
            keys=[hit.key for hit in hits],
        )
