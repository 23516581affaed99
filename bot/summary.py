""" "What the bot now remembers": a per-chat summary printed after a replay and by `qunyi status`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from sqlalchemy import func, select

from memory.history.view import topic_views
from memory.jargon import dictionary
from memory.messages import by_ids, chat_language
from memory.models import Chat, Message
from memory.persons import timeline_text
from memory.persons.card import CARD_WORDS
from memory.persons.service import persons_of
from memory.service import MemoryService
from memory.text import normalize, truncate


@dataclass(slots=True)
class ChatSummary:
    chat_id: int
    title: str
    sections: list[tuple[str, list[str]]] = field(default_factory=list)


SummarySection = Callable[[MemoryService, int], Awaitable[tuple[str, list[str]] | None]]


async def topics_section(memory: MemoryService, chat_id: int) -> tuple[str, list[str]] | None:
    """Packed topics (theme, true span, keywords, summary, count/forget_times), then those still cached."""
    async with memory.db.read() as session:
        views = await topic_views(session, chat_id)
    if not views:
        return None
    return "Topics", [view.line() for view in views]


MAX_SUMMARY_ALIASES = 6


async def person_facts_section(memory: MemoryService, chat_id: int) -> tuple[str, list[str]] | None:
    """People with the name the bot uses, their other names, current facts (with the message ids
    they came from) and the latest timeline entry — only what this chat learnt, labelled in the
    chat's language."""
    records = [r for r in await persons_of(memory).records(chat_id) if not r.is_bot]
    if not records:
        return None
    cited = [f.message_id for r in records for f in (*r.facts, *r.superseded) if f.message_id is not None]
    async with memory.db.read() as session:
        platform_ids = {m.id: m.platform_message_id for m in await by_ids(session, cited)}
        language = await chat_language(session, chat_id)
    labels = CARD_WORDS[language].labels
    lines = []
    for record in records[:12]:
        aliases = ", ".join(list(record.view.aliases)[:MAX_SUMMARY_ALIASES])
        line = record.name + (f" (also {aliases})" if aliases else "") + f" — {record.message_count} messages"
        lines.append(line)
        for fact in record.facts:
            source = platform_ids.get(fact.message_id or 0, fact.source)
            lines.append(f"    {labels.get(fact.key, fact.key)}: {fact.value} [{source}]")
        for old in record.superseded:
            source = platform_ids.get(old.message_id or 0, old.source)
            lines.append(f"    (was) {labels.get(old.key, old.key)}: {old.value} [{source}]")
        for event in record.timeline[:3]:
            lines.append(f"    · {timeline_text.shown(event.text, language)}")
    return "People", lines


async def jargon_section(memory: MemoryService, chat_id: int) -> tuple[str, list[str]] | None:
    """The terms seen most in this chat, each once as the chat sees it (its own entry of a term, such
    as a meaning a member gave, standing for the global one), counted as the term's most counted
    entry: term, count, status, meaning."""
    async with memory.db.read() as session:
        listed = await dictionary.list_entries(session, chat_id=chat_id, limit=12)
    if not listed:
        return None
    counts: dict[str, int] = {}
    for e in listed:
        counts[normalize(e.content)] = max(counts.get(normalize(e.content), 0), e.count)
    seen = [replace(e, count=counts[normalize(e.content)]) for e in dictionary.one_per_term(listed)]
    lines = []
    for e in sorted(seen, key=lambda e: -e.count):
        meaning = f" — {truncate(e.meaning, 60)}" if e.meaning else ""
        lines.append(f"{e.content} ×{e.count} [{e.status}]{meaning}")
    return "Jargon", lines


SECTIONS: list[SummarySection] = [person_facts_section, topics_section, jargon_section]


async def summarize(memory: MemoryService, sections: list[SummarySection] | None = None) -> list[ChatSummary]:
    async with memory.db.read() as session:
        rows = (
            await session.execute(
                select(Chat, func.count(Message.id))
                .join(Message, Message.chat_id == Chat.id, isouter=True)
                .group_by(Chat.id)
                .order_by(Chat.id)
            )
        ).all()
    summaries = []
    for chat, count in rows:
        name = chat.name or chat.platform_chat_id
        title = f"{name} ({chat.platform}:{chat.platform_chat_id}) — {count} messages"
        summary = ChatSummary(chat.id, title)
        for section in sections or SECTIONS:
            result = await section(memory, chat.id)
            if result is not None:
                summary.sections.append(result)
        summaries.append(summary)
    return summaries
