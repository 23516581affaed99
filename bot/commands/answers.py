"""The answers behind /recall, /who and /what: structured results with a JSON and a chat form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory.directory import match_members, members
from memory.jargon import dictionary
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
    hits = await memory.search([chat_id], query, limit)
    results = [
        {
            "kind": hit.kind,
            "id": hit.id,
            "speaker": hit.speaker,
            "time": hit.message.time.isoformat() if hit.message else None,
            "text": hit.text,
            "score": round(hit.score, 4),
        }
        for hit in hits
    ]
    lines = [f"关于「{query}」我记得:" if results else f"关于「{query}」我什么也没记住。"]
    for item in results:
        when = (item["time"] or "")[:16].replace("T", " ")
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
    """The dictionary's meaning of `term` as this chat may see it, with this chat's evidence only."""
    async with memory.db.read() as session:
        entry = await dictionary.lookup(session, term, chat_id)
        shown = entry is not None and entry.status != "rejected"
        examples = await dictionary.evidence(session, entry.id, chat_id, limit=2) if shown and entry else []
    data: dict[str, Any] = {"term": term, "chat_id": chat_id, "found": False, "meaning": None}
    if entry is None or not shown:
        return Answer(data, [f"我还不知道「{term}」是什么意思。"])
    data.update(
        found=True,
        meaning=entry.meaning or None,
        is_jargon=entry.is_jargon,
        status=entry.status,
        count=entry.count,
        examples=[{"speaker": e.message.speaker, "text": e.message.text} for e in examples],
    )
    if entry.meaning:
        lines = [f"「{entry.content}」: {entry.meaning}"]
        if entry.status == "inferred":
            lines[0] += "(从聊天里推测的)"
    else:
        lines = [f"「{entry.content}」在群里出现过 {entry.count} 次,还不知道是什么意思。"]
    lines += [f"- {e.message.speaker}: {truncate(e.message.text, MAX_ITEM_CHARS)}" for e in examples]
    return Answer(data, lines)
