"""Person cards: a compact, budget-fitted summary of a person for the reply context.

    【小红】又名：红红、xiaohong
    资料：职业 工程师；住在 北京；喜欢 猫、火锅
    近况：2024-06-01 下个月去北京；2024-05-20 和男朋友吵架

and in an English chat (`memory.text.language`):

    Bobby — also: Robert, robert_s
    Facts: job engineer; lives in Berlin; likes cats, hotpot
    Recently: 2024-06-01 calls themselves “Bobby”

Pieces are added in priority order (name, other names, attributes, recent timeline) while they fit
`max_chars` (and `max_tokens` when given); nothing is ever cut inside a character.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import jieba

from memory.persons import timeline_text
from memory.persons.facts import FAVORITE_PREFIX
from memory.text import estimate_tokens, grapheme_start, truncate
from memory.text.language import CHINESE, Language

DEFAULT_LABELS: dict[str, str] = {
    "job": "职业",
    "workplace": "工作单位",
    "location": "住在",
    "hometown": "老家",
    "nationality": "国籍",
    "school": "学校",
    "age": "年龄",
    "likes": "喜欢",
    "dislikes": "不喜欢",
    "habit": "习惯",
    "past_habit": "以前常",
    "pets": "宠物",
    "allergy": "过敏",
}
ENGLISH_LABELS: dict[str, str] = {
    "job": "job",
    "workplace": "works at",
    "location": "lives in",
    "hometown": "from",
    "nationality": "nationality",
    "school": "school",
    "age": "age",
    "likes": "likes",
    "dislikes": "dislikes",
    "habit": "habit",
    "past_habit": "used to",
    "pets": "pets",
    "allergy": "allergic to",
}
_ORDER = list(DEFAULT_LABELS)
MAX_VALUE_CHARS = 30
MAX_LIST_ITEMS = 5
MAX_EVENT_CHARS = 40


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """A dated event in a person's life as the chat learnt it, with the messages it came from."""

    time: datetime
    text: str
    message_keys: tuple[str, ...] = ()


LEFT_MARK = "(已退群)"  # after the name of a member who left the chat or was removed from it


@dataclass(frozen=True, slots=True)
class CardWords:
    """What a card writes itself in one language."""

    labels: Mapping[str, str]
    favorite: str  # the label of a favourite thing, {} standing for the thing
    head: str  # the name line, {} standing for the name
    also: str
    facts: str
    recently: str
    items: str  # between the items of a list
    sections: str  # between the pieces of a section
    left: str


CARD_WORDS: dict[Language, CardWords] = {
    "zh": CardWords(
        DEFAULT_LABELS, "最喜欢的{}", "【{}】", "又名：", "资料：", "近况：", "、", "；", LEFT_MARK
    ),
    "en": CardWords(
        ENGLISH_LABELS, "favourite {}", "{}", " — also: ", "Facts: ", "Recently: ", ", ", "; ", " (left)"
    ),
}


@dataclass(frozen=True, slots=True)
class PersonView:
    """What a card shows: `name` is the person_name the bot uses; `aliases` the other names; `left`
    marks a member who left the chat (or was removed from it)."""

    person_id: str
    name: str
    aliases: Sequence[str] = ()
    attributes: Mapping[str, str | Sequence[str]] = field(default_factory=dict)
    timeline: Sequence[TimelineEntry] = ()
    left: bool = False

    def shown_name(self, language: Language = CHINESE) -> str:
        """The name as a card heads it: the person_name (else the id), marked when they left."""
        name = self.name.strip() or self.person_id
        return f"{name}{CARD_WORDS[language].left}" if self.left else name


def _label(key: str, labels: Mapping[str, str], favorite: str) -> str:
    if key in labels:
        return labels[key]
    if key.startswith(FAVORITE_PREFIX):
        return favorite.format(key[len(FAVORITE_PREFIX) :])
    return key


def _attribute_order(keys: Sequence[str]) -> list[str]:
    rank = {key: i for i, key in enumerate(_ORDER)}
    return sorted(keys, key=lambda k: (rank.get(k, len(rank)), k))


def _shortened(value: str) -> str:
    """`value` within MAX_VALUE_CHARS: cut after its last whole word that fits (by jieba, so a Chinese
    word stays whole as well as an English one: "run before 9am on wee…" misled), with an ellipsis;
    between graphemes when no word boundary keeps half of it."""
    if len(value) <= MAX_VALUE_CHARS:
        return value
    room = MAX_VALUE_CHARS - 1
    end = 0
    for _, _, word_end in jieba.tokenize(value):
        if word_end > room:
            break
        end = word_end
    kept = value[: grapheme_start(value, end)].rstrip(" ,，、;；:：")
    return kept + "…" if len(kept) >= room // 2 else truncate(value, MAX_VALUE_CHARS)


def _value_text(value: str | Sequence[str], separator: str) -> str:
    if isinstance(value, str):
        return _shortened(value.strip())
    items = [_shortened(str(v).strip()) for v in value if str(v).strip()]
    return separator.join(items[-MAX_LIST_ITEMS:])


class _Budget:
    def __init__(self, max_chars: int, max_tokens: int | None) -> None:
        self.max_chars = max_chars
        self.max_tokens = max_tokens

    def fits(self, text: str) -> bool:
        if len(text) > self.max_chars:
            return False
        return self.max_tokens is None or estimate_tokens(text) <= self.max_tokens


def _add_section(lines: list[str], title: str, items: list[str], sep: str, budget: _Budget) -> None:
    """Append "title item1sep item2…" with as many items, in order, as fit."""
    kept: list[str] = []
    for item in items:
        line = title + sep.join([*kept, item])
        if not budget.fits("\n".join([*lines, line])):
            break
        kept.append(item)
    if kept:
        lines.append(title + sep.join(kept))


def render_card(
    person: PersonView,
    max_chars: int = 240,
    *,
    max_tokens: int | None = None,
    max_aliases: int = 3,
    max_timeline: int = 3,
    labels: Mapping[str, str] | None = None,
    language: Language = CHINESE,
) -> str:
    """The person's card within `max_chars` characters (and `max_tokens` estimated tokens if given),
    in the words of `language` (the chat's: `memory.text.language`).

    Order of priority: the name (marked for a member who left the chat), other names (up to
    `max_aliases`), attributes (job, workplace, location, … then others by key), the most recent
    `max_timeline` events, newest first.
    """
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    words = CARD_WORDS[language]
    names = labels if labels is not None else words.labels
    budget = _Budget(max_chars, max_tokens)
    header = words.head.format(person.shown_name(language))
    if not budget.fits(header):
        return truncate(header, max_chars)
    lines = [header]
    others = [a for a in dict.fromkeys(a.strip() for a in person.aliases) if a and a != person.name.strip()]
    if others:
        kept: list[str] = []
        for alias in others[:max_aliases]:
            candidate = f"{header}{words.also}{words.items.join([*kept, alias])}"
            if not budget.fits(candidate):
                break
            kept.append(alias)
        if kept:
            lines[0] = f"{header}{words.also}{words.items.join(kept)}"
    facts = []
    for key in _attribute_order(list(person.attributes)):
        text = _value_text(person.attributes[key], words.items)
        if text:
            facts.append(f"{_label(key, names, words.favorite)} {text}")
    _add_section(lines, words.facts, facts, words.sections, budget)
    events = sorted(person.timeline, key=lambda e: e.time, reverse=True)[:max_timeline]
    shown = [(e.time, timeline_text.shown(e.text.strip(), language)) for e in events]
    _add_section(
        lines,
        words.recently,
        [f"{time:%Y-%m-%d} {truncate(text, MAX_EVENT_CHARS)}" for time, text in shown if text],
        words.sections,
        budget,
    )
    return "\n".join(lines)
