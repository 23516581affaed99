"""Synthetic documents for stated preferences and habits ("I usually…", "我一般…", "I used to…").

A question like "what does she like to drink?" rarely shares words with "I always grab an oat latte".
For each such statement we store a small extra document — the statement's content plus words of its
kind (preference, habit, 喜欢, 习惯 …) — in `preference_docs`/`preference_fts`, linked to its
message. It is kept beside the verbatim message, never instead of it: recall ranks the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncSession

from memory.commands import asks_memory
from memory.models import PreferenceDoc
from memory.offload import text_work
from memory.persons.forgotten import forgotten_at
from memory.storage.fts import index_rows
from memory.text import analysed

if TYPE_CHECKING:
    from memory.ingest import Recorded

PREFERENCE_FTS = "preference_fts"
_END = r"[^.!?;。！？；\n]"

# (kind, pattern with one group holding the content)
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "habit",
        re.compile(
            rf"\bI (?:usually|always|typically|generally|normally|often|tend to) ({_END}{{4,100}})", re.I
        ),
    ),
    ("habit", re.compile(rf"\bI(?:'m| am) (?:used to|accustomed to) ({_END}{{4,100}})", re.I)),
    ("habit", re.compile(rf"\bevery (?:day|morning|evening|night|week|weekend) I ({_END}{{4,100}})", re.I)),
    (
        "like",
        re.compile(
            rf"\bI (?:really |just |also )?(?:prefer|like|love|enjoy|adore|favou?r) ({_END}{{3,100}})", re.I
        ),
    ),
    (
        "like",
        re.compile(
            rf"\bI(?:'m| am) (?:a (?:big |huge )?fan of|into|passionate about|obsessed with) "
            rf"({_END}{{3,100}})",
            re.I,
        ),
    ),
    ("like", re.compile(rf"\bmy fav(?:ou?rite)? ({_END}{{3,100}})", re.I)),
    ("dislike", re.compile(rf"\bI (?:don't|do not|never) (?:like|enjoy|eat|drink) ({_END}{{3,100}})", re.I)),
    ("dislike", re.compile(rf"\bI (?:dislike|hate|avoid|can't stand|cannot stand) ({_END}{{3,100}})", re.I)),
    ("dislike", re.compile(rf"\bI(?:'m| am) not (?:a fan of|into|fond of) ({_END}{{3,100}})", re.I)),
    (
        "experience",
        re.compile(rf"\b(?:in my experience|I've found that|I have found that),? ({_END}{{4,100}})", re.I),
    ),
    ("memory", re.compile(rf"\bI (?:still )?remember ({_END}{{4,100}})", re.I)),
    ("past", re.compile(rf"\bI used to ({_END}{{4,100}})", re.I)),
    (
        "past",
        re.compile(
            rf"\b(?:when I was|back when|growing up|as a (?:kid|child|teenager))[, ]({_END}{{4,100}})", re.I
        ),
    ),
    (
        "habit",
        re.compile(r"我(?:一般|通常|平时|平常|经常|总是|老是|每天|每周|每次|习惯)([^。！？；!?;\n]{2,60})"),
    ),
    (
        "like",
        re.compile(
            r"我(?:很|超|最|挺|比较|特别|也|还)?(?:喜欢|爱吃|爱喝|爱玩|爱看|偏爱|最爱)([^。！？；!?;\n]{1,60})"
        ),
    ),
    ("dislike", re.compile(r"我(?:不喜欢|讨厌|受不了|不爱|不吃|不喝|最烦)([^。！？；!?;\n]{1,60})")),
    ("past", re.compile(r"我(?:以前|之前|过去|小时候|当年|曾经|上学的时候)([^。！？；!?;\n]{2,60})")),
    ("memory", re.compile(r"我(?:还记得|记得)([^。！？；!?;\n]{2,60})")),
]

# Words of each kind, so "what does X prefer / 喜欢什么 / 习惯" finds the statement.
KIND_WORDS = {
    "habit": "habit usually routine often 习惯 平时 经常",
    "like": "likes prefers preference favorite enjoys loves 喜欢 偏好 爱",
    "dislike": "dislikes avoids hates 不喜欢 讨厌",
    "experience": "experience finds 经验",
    "memory": "remembers memory 记得 回忆",
    "past": "used to past childhood 以前 过去 小时候",
}


@dataclass(frozen=True, slots=True)
class Preference:
    """One stated preference or habit: its kind, the content, and the synthetic document text."""

    kind: str
    content: str

    @property
    def document(self) -> str:
        return f"{KIND_WORDS[self.kind]}: {self.content}"


def extract_preferences(text: str) -> list[Preference]:
    """Every preference/habit statement in `text` (distinct contents, in pattern order)."""
    found: dict[str, Preference] = {}
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            content = m.group(1).strip(" ,，、")
            if content and content not in found:
                found[content] = Preference(kind, content)
    return list(found.values())


class PreferenceObserver:
    """Ingest observer: stores the synthetic documents of each newly recorded message."""

    def __init__(self) -> None:
        self._asked: tuple[Recorded, list[Preference]] | None = None  # what `wants` last found

    async def wants(self, session: AsyncSession, recorded: Recorded) -> bool:
        """Whether the message states a preference (`memory.ingest.SelectiveObserver`). No query."""
        prefs = await _stated(recorded)
        self._asked = recorded, prefs
        return bool(prefs)

    async def __call__(self, session: AsyncSession, recorded: Recorded) -> None:
        asked, self._asked = self._asked, None
        prefs = asked[1] if asked is not None and asked[0] is recorded else await _stated(recorded)
        if not prefs:
            return
        message = recorded.message
        forgotten = await forgotten_at(session, recorded.person_id or None)
        if forgotten is not None and forgotten.covers_recorded(recorded):
            return  # their documents were deleted on request with their facts
        rows = [
            PreferenceDoc(
                chat_id=recorded.chat_id,
                message_id=recorded.message_id,
                person_id=recorded.person_id or None,
                kind=p.kind,
                text=p.document,
                time=message.time.timestamp(),
            )
            for p in prefs
        ]
        session.add_all(rows)
        await session.flush()
        await index_rows(session, PREFERENCE_FTS, [(row.id, row.text) for row in rows])


async def _stated(recorded: Recorded) -> list[Preference]:
    """The preferences a recorded message states (none for the bot's, for forwards of someone else's
    words and for memory commands)."""
    message = recorded.message
    if message.is_bot or message.forwarded or asks_memory(message):
        return []
    text = analysed(message.text)
    return await text_work(len(text), extract_preferences, text)


record_preferences = PreferenceObserver()
"""The one preference observer (`memory.recall.setup.attach_recall` adds it once)."""
