"""The recalled-memories section of the reply context: hybrid recall on the message being answered,
minus what the context already shows (`not_shown`).
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


def not_shown(hits: list[RecallHit], shown: set[int]) -> list[RecallHit]:
    """`hits` (best first) without what the context shows already: the messages of `shown` (also as
    a copy merged into a recalled duplicate), a topic all of whose messages are in `shown`, and a
    message a recalled topic quotes word for word (an offline summary is its central messages): that
    topic takes the place of the first message it quotes."""
    topics = [
        hit
        for hit in hits
        if hit.kind == "history" and not (hit.source_message_ids and shown.issuperset(hit.source_message_ids))
    ]
    topic_keys = {topic.key for topic in topics}
    kept: dict[tuple[str, int], RecallHit] = {}
    for hit in hits:
        if hit.kind == "history":
            if hit.key in topic_keys:
                kept.setdefault(hit.key, hit)
            continue
        if shown.intersection((hit.id, *hit.duplicates)):
            continue
        quoting = [t for t in topics if hit.id in t.source_message_ids and hit.text and hit.text in t.text]
        stand_in = quoting[0] if quoting else hit
        kept.setdefault(stand_in.key, stand_in)
    return list(kept.values())


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
        hits = not_shown(await self.recaller.recall(query), shown)[: self.limit]
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
