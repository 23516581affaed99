"""The answers behind /recall, /who and /what: structured results with a JSON and a chat form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory.directory import match_members, members
from memory.recall import RecallQuery, reinforce_history
from memory.service import MemoryService
from memory.text import truncate

MAX_ITEM_CHARS = 200


@dataclass(slots=True)
class Answer:
    """A command's result: `data` is the JSON contract, `text` the chat rendering."""

    data: dict[str, Any]
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


async def recall(memory: MemoryService, chat_id: int, query: str, limit: int = 5) -> Answer:
    """The hybrid recall over messages and topics of the chats this chat may read; shown topics are
    reinforced (their `count` rises)."""
    chat_ids = await memory.recaller.chats_for(chat_id)
    hits = await memory.recall(RecallQuery(query, chat_ids, memory.clock.now(), limit=limit))
    shown_topics = [hit.id for hit in hits if hit.kind == "history"]
    if shown_topics:
        async with memory.db.write() as session:
            await reinforce_history(session, shown_topics)
    results = [
        {
            "kind": hit.kind,
            "id": hit.id,
            "chat_id": hit.chat_id,
            "speaker": hit.speaker,
            "time": hit.time.isoformat(),
            "theme": hit.theme or None,
            "text": hit.text,
            "score": round(hit.score, 6),
        }
        for hit in hits
    ]
    lines = [f"关于「{query}」我记得:" if results else f"关于「{query}」我什么也没记住。"]
    for item in results:
        when = item["time"][:16].replace("T", " ")
        if item["kind"] == "history":
            lines.append(f"- [话题 {when[:10]}] {item['theme']}: {truncate(item['text'], MAX_ITEM_CHARS)}")
        else:
            lines.append(f"- [{when}] {item['speaker']}: {truncate(item['text'], MAX_ITEM_CHARS)}")
    return Answer({"query": query, "chat_id": chat_id, "results": results}, lines)


async def who(memory: MemoryService, chat_id: int, name: str) -> Answer:
    async with memory.db.read() as session:
        found = match_members(await members(session, chat_id), name)
    data = {
        "query": name,
        "chat_id": chat_id,
        "ambiguous": len(found) > 1,
        "matches": [m.to_json() for m in found],
    }
    if not found:
        return Answer(data, [f"我不认识「{name}」。"])
    lines = [f"「{name}」可能是好几个人:" if len(found) > 1 else f"「{name}」:"]
    for m in found:
        others = ", ".join(n for n in {m.nickname, m.card} if n and n != m.name)
        aka = f"(也叫 {others})" if others else ""
        lines.append(f"- {m.name}{aka} · {m.message_count} 条消息 · 最近 {m.last_seen:%Y-%m-%d}")
    return Answer(data, lines)


async def what(memory: MemoryService, chat_id: int, term: str) -> Answer:
    data: dict[str, Any] = {"term": term, "chat_id": chat_id, "found": False, "meaning": None}
    return Answer(data, [f"我还不知道「{term}」是什么意思。"])
