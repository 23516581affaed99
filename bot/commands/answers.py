"""The answers behind /recall, /who and /what: structured results with a JSON and a chat form."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from memory.context.render import one_line, stamped
from memory.history.reinforce import reinforce
from memory.jargon import dictionary
from memory.persons.card import render_card
from memory.persons.service import persons_of
from memory.recall import RecallHit, RecallQuery
from memory.recall.timeexpr import in_zone
from memory.service import MemoryService
from memory.text import truncate
from memory.text.language import Language

MAX_ITEM_CHARS = 200
# How much of a member's question, name or term an answer repeats: a pasted paragraph repeated whole
# would fill `[reply] max_chars` and push out what was recalled.
MAX_ECHO_CHARS = 40
# A wait shorter than this is told in seconds, a longer one in minutes (rounded up).
WAIT_IN_SECONDS_UNDER = 120


@dataclass(frozen=True, slots=True)
class Words:
    """What the answers write themselves in one language ({} and {name} standing for what they hold)."""

    quoted: str
    recalled: str
    recalled_nothing: str
    topic: str
    unknown_person: str
    several_people: str
    other_names: str
    messages: tuple[str, str]  # a count of one, of any other number
    seen: str
    left: str
    unknown_term: str
    inferred: str
    member_said: str
    times: tuple[str, str]  # a count of one, of any other number
    unexplained: str
    items: str
    usage: str
    slow_down: str  # {} a wait in `seconds` or `minutes`
    seconds: tuple[str, str]  # a count of one, of any other number
    minutes: tuple[str, str]  # a count of one, of any other number


WORDS: dict[Language, Words] = {
    "zh": Words(
        quoted="「{}」",
        recalled="关于{}我记得:",
        recalled_nothing="关于{}我什么也没记住。",
        topic="话题",
        unknown_person="我不认识{}。",
        several_people="{}可能是好几个人，说具体一点？",
        other_names="（{}）",
        messages=("{} 条消息", "{} 条消息"),
        seen="{count} · 最近 {last}",
        left=" · {} 退群",
        unknown_term="我还不知道{}是什么意思。",
        inferred="(从聊天里推测的)",
        member_said="(群友说的)",
        times=("{} 次", "{} 次"),
        unexplained="{term}在群里出现过 {count}，还不知道是什么意思。",
        items="、",
        usage="用法: /recall <关键词> · /who <名字> · /what <词>",
        slow_down="问得有点频繁了，{}后再问吧。",
        seconds=("{} 秒", "{} 秒"),
        minutes=("{} 分钟", "{} 分钟"),
    ),
    "en": Words(
        quoted="“{}”",
        recalled="What I remember about {}:",
        recalled_nothing="I remember nothing about {}.",
        topic="topic",
        unknown_person="I don't know {}.",
        several_people="{} could be several people. Who do you mean?",
        other_names=" ({})",
        messages=("{} message", "{} messages"),
        seen="{count} · last seen {last}",
        left=" · left {}",
        unknown_term="I don't know what {} means yet.",
        inferred=" (guessed from the chat)",
        member_said=" (as a member explained it)",
        times=("once", "{} times"),
        unexplained="{term} has come up {count} here; I don't know what it means yet.",
        items=", ",
        usage="Usage: /recall <words> · /who <name> · /what <term>",
        slow_down="That's a lot of questions at once; ask again in {}.",
        seconds=("{} second", "{} seconds"),
        minutes=("{} minute", "{} minutes"),
    ),
}


async def words_for(memory: MemoryService, chat_id: int, asked: str) -> Words:
    """The answer's words: in the language the chat writes in, the question counted too."""
    return WORDS[await memory.language(chat_id, [asked])]


def _counted(count: int, forms: tuple[str, str]) -> str:
    """`count` in the words of `forms` (one, any other number)."""
    return (forms[0] if count == 1 else forms[1]).format(count)


def _echoed(asked: str, words: Words) -> str:
    """A member's question, name or term as an answer repeats it: quoted, at most MAX_ECHO_CHARS."""
    return words.quoted.format(truncate(asked, MAX_ECHO_CHARS))


def _quoted(text: str) -> str:
    """Remembered text as one item of an answer's list: at most MAX_ITEM_CHARS, its own line breaks
    continuing it on indented lines (`one_line`), so that a message holding "\n- [time] name: …"
    cannot pass for another item recalled from someone else."""
    return one_line(truncate(text, MAX_ITEM_CHARS))


@dataclass(slots=True)
class Answer:
    """A command's result: `data` is the JSON contract, `text` the chat rendering."""

    data: dict[str, Any]
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


async def recalled(
    memory: MemoryService,
    chat_id: int,
    query: str,
    limit: int = 5,
    *,
    reinforce_shown: bool = True,
    counted: set[int] | None = None,
    asker: int | None = None,
) -> list[RecallHit]:
    """The hybrid recall over messages and topics of the chats this chat may read; unless `reinforce_shown`
    is false (a read-only caller), shown topics are reinforced (their `count` rises). `counted` holds
    the topics already reinforced in the same exchange (a reply and its tool calls): they are not
    counted again, and the topics reinforced now are added to it. `asker` is the person asking, for
    the chats `[recall] per_person_cross_chat` opens to them."""
    chat_ids = await memory.recaller.chats_for(chat_id, asker)
    hits = await memory.recall(RecallQuery(query, chat_ids, memory.clock.now(), limit=limit))
    shown_topics = [hit.id for hit in hits if hit.kind == "history" and hit.id not in (counted or ())]
    if shown_topics and reinforce_shown:
        async with memory.db.write() as session:
            await reinforce(session, shown_topics)
        if counted is not None:
            counted.update(shown_topics)
    return hits


async def recall(
    memory: MemoryService,
    chat_id: int,
    query: str,
    limit: int = 5,
    *,
    reinforce_shown: bool = True,
    asker: int | None = None,
) -> Answer:
    """/recall: what `recalled` finds (for `asker`; topics reinforced unless `reinforce_shown` is
    false), as JSON and as the chat text members read."""
    hits = await recalled(memory, chat_id, query, limit, reinforce_shown=reinforce_shown, asker=asker)
    results: list[dict[str, Any]] = [
        {
            "kind": hit.kind,
            "id": hit.id,
            "chat_id": hit.chat_id,
            "speaker": hit.speaker,
            "time": hit.time.isoformat(),
            "theme": hit.theme or None,
            "text": hit.text,
            "score": round(hit.score, 6),
            "found_by": dict(hit.found_by),
            "signals": dict(hit.signals),
            "forwarded": hit.forwarded,
        }
        for hit in hits
    ]
    words = await words_for(memory, chat_id, query)
    lines = [(words.recalled if results else words.recalled_nothing).format(_echoed(query, words))]
    zone = memory.recaller.settings.timezone  # the chat text shows times where members count days
    for hit, item in zip(hits, results, strict=True):
        when = f"{in_zone(hit.time, zone):%Y-%m-%d %H:%M}"
        if item["kind"] == "history":
            lines.append(f"- [{words.topic} {when[:10]}] {one_line(item['theme'])}: {_quoted(item['text'])}")
        else:
            stamp = stamped(when, forwarded=hit.forwarded)
            lines.append(f"- {stamp} {item['speaker']}: {_quoted(item['text'])}")
    return Answer({"query": query, "chat_id": chat_id, "results": results}, lines)


async def who(memory: MemoryService, chat_id: int, name: str) -> Answer:
    """Who a name is in this chat, answered from the person card (aliases, facts, timeline) — only
    what this chat learnt. Several close candidates are reported as ambiguous, never guessed. A member
    who left the chat is still found (what they said is the chat's record), marked as gone."""
    persons = persons_of(memory)
    found = await persons.who(chat_id, name)
    config = persons.config()
    data = {
        "query": name,
        "chat_id": chat_id,
        "ambiguous": found.ambiguous,
        "matches": [
            {
                "person_id": r.person_id,
                "user_id": r.platform_user_id,
                "name": r.name,
                "nickname": r.nickname,
                "card": r.card,
                "aliases": list(r.view.aliases),
                "attributes": dict(r.view.attributes),
                "message_count": r.message_count,
                "last_seen": r.last_seen.isoformat(),
                "left_at": None if r.left_at is None else r.left_at.isoformat(),
                "confidence": next(
                    (m.confidence for m in found.resolution.matches if m.person_id == str(r.person_id)), 1.0
                ),
            }
            for r in found.records
        ],
    }
    language = await memory.language(chat_id, [name])
    words = WORDS[language]
    if not found.records:
        return Answer(data, [words.unknown_person.format(_echoed(name, words))])
    if found.ambiguous:
        lines = [words.several_people.format(_echoed(name, words))]
        for r in found.records:
            others = words.other_names.format(words.items.join(list(r.view.aliases)[:3]))
            lines.append(f"- {r.view.shown_name(language)}{others}")
        return Answer(data, lines)
    record = found.records[0]
    card = render_card(record.view, config.card_max_chars, max_tokens=config.card_tokens, language=language)
    count = _counted(record.message_count, words.messages)
    seen = words.seen.format(count=count, last=f"{record.last_seen:%Y-%m-%d}")
    if record.left_at is not None:
        seen += words.left.format(f"{record.left_at:%Y-%m-%d}")
    lines = [*card.splitlines(), seen]
    return Answer(data, lines)


async def what(memory: MemoryService, chat_id: int, term: str) -> Answer:
    """The dictionary's meaning of `term` as this chat may see it, with this chat's evidence and count
    only: a term with no meaning yet that this chat never used is not known here (another chat's
    candidate stays that chat's business)."""
    async with memory.db.read() as session:
        entry = await dictionary.lookup(session, term, chat_id)
        shown = entry is not None and entry.status != "rejected"
        here = (await dictionary.chat_counts(session, entry.id)).get(chat_id, 0) if shown and entry else 0
        shown = shown and entry is not None and (bool(entry.meaning) or here > 0)
        examples = await dictionary.evidence(session, entry.id, chat_id, limit=2) if shown and entry else []
    said = zip(await memory.speaker_names(chat_id, [e.message for e in examples]), examples, strict=True)
    quoted = [(speaker, e.message.text) for speaker, e in said]
    data: dict[str, Any] = {"term": term, "chat_id": chat_id, "found": False, "meaning": None}
    words = await words_for(memory, chat_id, term)
    if entry is None or not shown:
        return Answer(data, [words.unknown_term.format(_echoed(term, words))])
    data.update(
        found=True,
        meaning=entry.meaning or None,
        is_jargon=entry.is_jargon,
        status=entry.status,
        provenance=entry.provenance,
        count=here,
        examples=[{"speaker": speaker, "text": text} for speaker, text in quoted],
    )
    named = words.quoted.format(entry.content)
    if entry.meaning:
        lines = [f"{named}: {one_line(entry.meaning)}"]
        if entry.provenance == dictionary.MEMBER:
            lines[0] += words.member_said
        elif entry.status == "inferred":
            lines[0] += words.inferred
    else:
        lines = [words.unexplained.format(term=named, count=_counted(here, words.times))]
    lines += [f"- {speaker}: {_quoted(text)}" for speaker, text in quoted]
    return Answer(data, lines)


async def slow_down(memory: MemoryService, chat_id: int, asked: str, wait_seconds: int) -> Answer:
    """The one note a member over `[reply] commands_per_member` gets: when they may ask again (in
    `wait_seconds`), in the chat's language, `asked` (their command's argument) counted."""
    words = await words_for(memory, chat_id, asked)
    if wait_seconds < WAIT_IN_SECONDS_UNDER:
        wait = _counted(wait_seconds, words.seconds)
    else:
        wait = _counted(math.ceil(wait_seconds / 60), words.minutes)
    return Answer({"error": "too many commands", "retry_after": wait_seconds}, [words.slow_down.format(wait)])
