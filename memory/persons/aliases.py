"""Resolving a name to the people of one chat: exact, pinyin, nickname variants, initials and fuzzy.

`AliasIndex` is built from the aliases of one chat's people. `resolve` answers "who is 红红?" with
every plausible person and a confidence, and says when two people are too close to tell apart
(reported as ambiguous, never guessed). `find_mentions` finds names inside a sentence for recall and
the reply context.

Confidence of a match, before the alias weight is applied:
exact 1.0 · same pinyin (小红/晓红/xiaohong) or the same letters without accents (José/Jose) 0.9 ·
same characters after removing a diminutive or a given name's honorific (小红/红红/阿红/红儿/红姐; 红红
and 小红 for the 红红 of 红红火火) 0.85 · one word of a Latin full name
(Sam or O'Connor of "Sam O'Connor"; inside text only when capitalised, not ordinary English and nobody
else's) 0.8 · same pinyin after removing a diminutive (小红/阿宏/hong) 0.75 · an English nickname of a
Latin given name or the other way round (Liz of "Elizabeth Park", Robert of "Bob"; in text as a word of
a full name is) 0.65 · initials (xh) 0.55 · fuzzy (typos in Latin and pinyin spellings) 0.6-0.8 by
similarity. The alias weight w in [0, 1] scales it by (0.8 + 0.2·w), so a stale nickname loses to a
current card.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import chain
from typing import NamedTuple

import jieba
import regex
from rapidfuzz import fuzz, process

from memory.persons.english import is_common_english, names_a_member, nickname_relatives, written_as_a_name
from memory.persons.names import (
    DIMINUTIVE_PREFIX_CHARS,
    DIMINUTIVE_SUFFIX_CHARS,
    NameForms,
    has_cjk,
    name_forms,
    name_key,
    pinyin_syllables,
    to_pinyin,
    unaccented,
    without_honorific,
)
from memory.text import dictionary_frequency, dictionary_tag, words
from memory.text.mapped import normalize_mapped

AMBIGUITY_MARGIN = 0.1
MIN_CONFIDENCE = 0.5
FUZZY_THRESHOLD = 85.0
FUZZY_MIN_CHARS = 5
# A jieba dictionary word this frequent is ordinary vocabulary (事实 4593, 老师 6415); 红红 has 15.
COMMON_WORD_FREQ = 100
COMMON_WORD_FACTOR = 0.5
INSIDE_WORD_FACTOR = 0.65
MAX_CJK_VARIANT_CHARS = 4

_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_LATIN_TOKEN = re.compile(r"[a-z0-9]+")
# What joins the parts of one name without a space: an apostrophe or hyphen in Latin names ("Sam
# O'Connor", "Mary-Jane"), a middle dot in Chinese transcriptions of foreign names (托马斯·穆勒).
# `name_key` drops them, so a name is matched with its parts run together.
_LATIN_JOINERS = frozenset("'’ʼ-‐")
_CJK_NAME_DOTS = frozenset("·・‧")
# A possessive after a name ("O'Connor's") is no part of it.
_POSSESSIVE = "s"
LATIN_NAME_WORDS = 3
# At most this many parts in a run ("mary-jane o'connor-smith" has 6): a long hyphenated string (a
# message of "a-a-a-…") is not read as one name of thousands of parts, at a cost growing with its square.
LATIN_NAME_PARTS = 6
# "Sam O'Connor", "Mary-Jane Watson": a capitalised first name, then more Latin words.
_LATIN_FULL_NAME = re.compile(r"(?P<first>[A-Z][A-Za-z'’-]+)(?:\s+[A-Za-z][\w'’.-]*)+")
# A word of Latin letters and digits in normalised text; parts joined by an apostrophe or hyphen are
# separate words here, joined by `_whole_words`.
_LATIN_WORD = regex.compile(r"[\p{Latin}\d]+")


class How(StrEnum):
    """How a name matched an alias."""

    EXACT = "exact"
    PINYIN = "pinyin"
    VARIANT = "variant"
    INITIALS = "initials"
    FUZZY = "fuzzy"


_BASE = {How.EXACT: 1.0, How.PINYIN: 0.9, How.INITIALS: 0.55}
_VARIANT_CHARS = 0.85
_VARIANT_PINYIN = 0.75
_VARIANT_ACCENTS = 0.9
_NAME_PART = 0.8
_NICKNAME = 0.65


@dataclass(frozen=True, slots=True)
class AliasEntry:
    """One name a person is known by in a chat. `source` is free text for the caller (card, nickname,
    self, other, person_name, llm); `weight` in [0, 1] says how current/trusted it is."""

    person_id: str
    alias: str
    source: str = "nickname"
    weight: float = 1.0


class Match(NamedTuple):
    """A person a name may refer to."""

    person_id: str
    confidence: float
    how: How
    alias: str


@dataclass(frozen=True, slots=True)
class Resolution:
    """The people a name may refer to, best first, and whether the top two are too close to call."""

    query: str
    matches: list[Match]
    ambiguous: bool

    @property
    def person_id(self) -> str | None:
        """The resolved person, or None when nothing matched or the name is ambiguous."""
        if not self.matches or self.ambiguous:
            return None
        return self.matches[0].person_id

    @property
    def confidence(self) -> float:
        return self.matches[0].confidence if self.matches else 0.0


@dataclass(frozen=True, slots=True)
class Mention:
    """A name found in a text: `span` is (start, end) in the original text. `person_id` is None when
    the name is ambiguous; `candidates` then lists the people it may be."""

    person_id: str | None
    span: tuple[int, int]
    confidence: float
    how: How
    text: str
    candidates: tuple[str, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class _Indexed:
    entry: AliasEntry
    forms: NameForms

    def scaled(self, base: float) -> float:
        weight = min(1.0, max(0.0, self.entry.weight))
        return round(base * (0.8 + 0.2 * weight), 4)


def _best_per_person(candidates: Iterable[Match]) -> list[Match]:
    best: dict[str, Match] = {}
    for match in candidates:
        held = best.get(match.person_id)
        if held is None or match.confidence > held.confidence:
            best[match.person_id] = match
    return sorted(best.values(), key=lambda m: (-m.confidence, m.person_id))


def _is_ambiguous(matches: list[Match], margin: float) -> bool:
    return len(matches) >= 2 and matches[0].confidence - matches[1].confidence < margin


def _name_part_keys(alias: str) -> list[str]:
    """The keys of the words of a Latin full name ("sam" and "oconnor" of "Sam O'Connor", "maryjane"
    and "watson" of "Mary-Jane Watson"); none for a name of one word or not of Latin words. An
    initial ("J.") is no part."""
    if not _LATIN_FULL_NAME.fullmatch(alias.strip()):
        return []
    keys = (name_key(word) for word in alias.split())
    return list(dict.fromkeys(key for key in keys if len(key) >= 2))


def _given_name_key(alias: str) -> str:
    """The key of the given name of a Latin name ("elizabeth" of "Elizabeth Park", "robert" of "Robert"),
    else ""."""
    alias = alias.strip()
    if found := _LATIN_FULL_NAME.fullmatch(alias):
        alias = found["first"]
    key = name_key(alias)
    return key if key.isascii() and key.isalpha() and len(key) >= 2 else ""


def _strip_units(units: list[str], prefixes: Iterable[str], suffixes: Iterable[str]) -> str:
    if len(units) >= 2 and units[0] in prefixes:
        units = units[1:]
    if len(units) >= 2 and units[-1] in suffixes:
        units = units[:-1]
    collapsed = [u for i, u in enumerate(units) if i == 0 or units[i - 1] != u]
    return "".join(collapsed)


class AliasIndex:
    """The aliases of one chat's people, indexed for `resolve` and `find_mentions`."""

    def __init__(
        self,
        entries: Iterable[AliasEntry | tuple[str, str, str, float]],
        *,
        margin: float = AMBIGUITY_MARGIN,
        min_confidence: float = MIN_CONFIDENCE,
        fuzzy_threshold: float = FUZZY_THRESHOLD,
    ) -> None:
        self.margin = margin
        self.min_confidence = min_confidence
        self.fuzzy_threshold = fuzzy_threshold
        self._by_key: dict[str, list[_Indexed]] = defaultdict(list)
        self._by_pinyin: dict[str, list[_Indexed]] = defaultdict(list)
        self._by_core_chars: dict[str, list[_Indexed]] = defaultdict(list)
        self._by_core_pinyin: dict[str, list[_Indexed]] = defaultdict(list)
        self._by_initials: dict[str, list[_Indexed]] = defaultdict(list)
        self._by_unaccented: dict[str, list[_Indexed]] = defaultdict(list)
        self._by_part: dict[str, list[_Indexed]] = defaultdict(list)
        self._by_nickname: dict[str, list[_Indexed]] = defaultdict(list)
        self._max_key_chars = 0
        for raw in entries:
            entry = raw if isinstance(raw, AliasEntry) else AliasEntry(*raw)
            if not isinstance(entry.person_id, str) or not entry.person_id:
                raise ValueError(f"alias entry needs a person_id: {raw!r}")
            forms = name_forms(entry.alias or "")
            if not forms.key:
                continue
            item = _Indexed(entry, forms)
            self._by_key[forms.key].append(item)
            self._by_pinyin[forms.pinyin].append(item)
            if forms.core_chars:
                self._by_core_chars[forms.core_chars].append(item)
            if forms.reduplicated_head:
                self._by_core_chars[forms.reduplicated_head].append(item)
            if forms.core_pinyin:
                self._by_core_pinyin[forms.core_pinyin].append(item)
            if forms.initials:
                self._by_initials[forms.initials].append(item)
            if forms.unaccented:
                self._by_unaccented[forms.unaccented].append(item)
            for part in _name_part_keys(entry.alias or ""):
                self._by_part[part].append(item)
            if given := _given_name_key(entry.alias or ""):
                for nickname in nickname_relatives(given):
                    self._by_nickname[nickname].append(item)
            self._max_key_chars = max(self._max_key_chars, len(forms.key))
        self._fuzzy_keys = [k for k in self._by_pinyin if len(k) >= FUZZY_MIN_CHARS]

    def __len__(self) -> int:
        return sum(len(items) for items in self._by_key.values())

    def person_ids(self) -> set[str]:
        """Everyone with at least one usable alias."""
        return {item.entry.person_id for items in self._by_key.values() for item in items}

    # -- matching -------------------------------------------------------------------------------

    def _lookup(
        self,
        key: str,
        pinyin: str,
        core_chars: str,
        core_pinyin: str,
        *,
        initials: bool,
        fuzzy: bool,
    ) -> list[Match]:
        found: list[Match] = []

        def add(items: list[_Indexed], base: float, how: How) -> None:
            found.extend(Match(i.entry.person_id, i.scaled(base), how, i.entry.alias) for i in items)

        add(self._by_key.get(key, []), _BASE[How.EXACT], How.EXACT)
        if key:
            bare = unaccented(name_key(key)) or key  # not name_forms: its pinyin is not needed here
            add(self._by_unaccented.get(bare, []), _VARIANT_ACCENTS, How.VARIANT)
            if bare != key:
                add(self._by_key.get(bare, []), _VARIANT_ACCENTS, How.VARIANT)
        if pinyin:
            add(self._by_pinyin.get(pinyin, []), _BASE[How.PINYIN], How.PINYIN)
        if core_chars:
            add(self._by_core_chars.get(core_chars, []), _VARIANT_CHARS, How.VARIANT)
        if core_pinyin:
            add(self._by_core_pinyin.get(core_pinyin, []), _VARIANT_PINYIN, How.VARIANT)
        if initials and key.isascii() and key.isalpha() and 2 <= len(key) <= 4:
            add(self._by_initials.get(key, []), _BASE[How.INITIALS], How.INITIALS)
        # Fuzzy only for Latin spellings: for Chinese names one different character is another name.
        if fuzzy and pinyin.isascii() and not has_cjk(key) and len(pinyin) >= FUZZY_MIN_CHARS:
            for other, score, _ in process.extract(
                pinyin,
                self._fuzzy_keys,
                scorer=fuzz.ratio,
                score_cutoff=self.fuzzy_threshold,
                limit=10,
            ):
                if other == pinyin:
                    continue
                base = 0.6 + 0.2 * (score - self.fuzzy_threshold) / (100.0 - self.fuzzy_threshold)
                add(self._by_pinyin[other], base, How.FUZZY)
        return found

    def resolve(self, name: str) -> Resolution:
        """Everyone `name` may refer to (confidence ≥ min_confidence), best first; `ambiguous` when the
        best two people are within `margin` of each other."""
        forms = name_forms(name or "")
        if not forms.key:
            return Resolution(name, [], False)
        core_chars = forms.core_chars or (forms.key if forms.is_cjk else "")
        matches = self._lookup(
            forms.key,
            forms.pinyin,
            core_chars,
            forms.core_pinyin,
            initials=True,
            fuzzy=True,
        )
        matches += self._part_matches(forms.key) + self._nickname_matches(forms.key)
        kept = [m for m in _best_per_person(matches) if m.confidence >= self.min_confidence]
        return Resolution(name, kept, _is_ambiguous(kept, self.margin))

    # -- mentions inside text -------------------------------------------------------------------

    def find_mentions(self, text: str, *, min_confidence: float = 0.6) -> list[Mention]:
        """Names of this chat's people inside `text`, left to right, non-overlapping.

        Exact aliases are found anywhere (Latin ones on word boundaries); pinyin and diminutive
        variants only for 2-4 character Chinese spans and multi-syllable Latin words; fuzzy only for
        Latin words of 5+ letters. Ordinary vocabulary (frequent jieba words) and parts of a longer
        word are discounted so that 事实 is not 石石 and 红色 is not 红红. One word of a Latin full
        name alone ("O'Connor") counts as `_part_candidates` says.
        """
        if not text or not self._by_key:
            return []
        norm, origin, origin_end = _normalize_with_offsets(text)
        token_spans = _jieba_spans(norm)
        found: list[Mention] = []
        candidates = chain(
            self._span_candidates(text, norm, origin), self._part_candidates(text, norm, origin)
        )
        for start, end, matches in candidates:
            penalty = _context_factor(norm[start:end], start, end, token_spans)
            scored = [
                m._replace(confidence=round(m.confidence * penalty, 4))
                for m in matches
                if m.how is How.EXACT or penalty == 1.0
            ]
            best = [m for m in _best_per_person(scored) if m.confidence >= min_confidence]
            if not best:
                continue
            ambiguous = _is_ambiguous(best, self.margin)
            span = (origin[start], origin_end[end - 1])
            found.append(
                Mention(
                    None if ambiguous else best[0].person_id,
                    span,
                    best[0].confidence,
                    best[0].how,
                    text[span[0] : span[1]],
                    tuple(m.person_id for m in best) if ambiguous else (),
                )
            )
        return _non_overlapping(found)

    def _part_matches(self, key: str) -> list[Match]:
        """The people one of whose full names has the word `key` ("sam" or "oconnor" of "Sam O'Connor")."""
        return [
            Match(i.entry.person_id, i.scaled(_NAME_PART), How.VARIANT, i.entry.alias)
            for i in self._by_part.get(key, [])
        ]

    def _nickname_matches(self, key: str) -> list[Match]:
        """The people whose given name `key` is a nickname of, or has as a nickname (`nickname_relatives`:
        "liz" for Elizabeth Park, "robert" for Bob)."""
        return [
            Match(i.entry.person_id, i.scaled(_NICKNAME), How.VARIANT, i.entry.alias)
            for i in self._by_nickname.get(key, [])
        ]

    def _part_candidates(
        self, text: str, norm: str, origin: list[int]
    ) -> Iterable[tuple[int, int, list[Match]]]:
        """Whole words of the text that are one word of one person's Latin full name ("ask Priya",
        "did O'Connor send it?"), else a nickname of one person's given name ("Liz" for Elizabeth
        Park), written as a name (`written_as_a_name`: "ask Sam" and "ask Priya", not "Will you" nor
        "in May"). A word that may be two people names neither: ambiguous, it is left out."""
        if not self._by_part and not self._by_nickname:
            return
        for start, end in _whole_words(norm):
            key = name_key(norm[start:end])
            own = self._part_matches(key)
            matches = own or self._nickname_matches(key)
            named = names_a_member if own else written_as_a_name
            if (
                matches
                and len({m.person_id for m in matches}) == 1
                and named(text, origin[start], norm[start:end])
            ):
                yield start, end, matches

    @staticmethod
    def _names_them(text: str, norm: str, origin: list[int], start: int, end: int) -> bool:
        """Whether the Latin alias at `norm[start:end]` names its member: one that is an everyday
        English word only where written as a name, or beside Chinese."""
        piece = norm[start:end]
        return (
            not _is_everyday_word(piece)
            or _beside_cjk(norm, start, end)
            or names_a_member(text, origin[start], piece)
        )

    def _span_candidates(
        self, text: str, norm: str, origin: list[int]
    ) -> Iterable[tuple[int, int, list[Match]]]:
        """Spans of the text that are someone's alias, or (2-4 Chinese characters) a variant of one;
        an alias that is one everyday English word only where it names them (`names_a_member`: "ask
        Will", "Will is coming", not "I will come"), or beside Chinese ("sam你来了吗")."""
        n = len(norm)
        pinyin_at = _char_pinyin(norm)
        for start in range(n):
            if not _is_word_char(norm[start]):
                continue
            if (
                _is_latin(norm[start])
                and start > 0
                and (_is_latin(norm[start - 1]) or _glued_before(norm, start))
            ):
                continue  # inside a word: "jane" of "mary-jane", "connor" of "o'connor"
            dots = 0
            for end in range(start + 1, n + 1):
                if end - start - dots > self._max_key_chars:
                    break
                if _is_cjk_name_dot(norm, end - 1):
                    dots += 1
                    continue
                if not _is_word_char(norm[end - 1]):
                    break
                if _is_latin(norm[end - 1]) and end < n and (_is_latin(norm[end]) or _glued_after(norm, end)):
                    continue
                piece = norm[start:end]
                key = "".join(c for c in piece if c not in _CJK_NAME_DOTS) if dots else piece
                matches = self._lookup(key, "", "", "", initials=False, fuzzy=False)
                if matches and _is_latin(piece[0]) and not self._names_them(text, norm, origin, start, end):
                    continue
                if 2 <= len(piece) <= MAX_CJK_VARIANT_CHARS and all(_CJK_CHAR.match(c) for c in piece):
                    units = pinyin_at[start:end]
                    matches += self._lookup(
                        "",
                        "".join(units),
                        _strip_units(
                            list(without_honorific(piece)), DIMINUTIVE_PREFIX_CHARS, DIMINUTIVE_SUFFIX_CHARS
                        ),
                        _strip_units(units, ("xiao", "a", "lao"), ("zi", "er")),
                        initials=False,
                        fuzzy=False,
                    )
                if matches:
                    yield start, end, matches
        yield from self._latin_candidates(norm)

    def _latin_candidates(self, norm: str) -> Iterable[tuple[int, int, list[Match]]]:
        """Runs of 1-3 Latin words ("xiao hong", "xiaohong", "alise") matched by pinyin, variant or
        fuzzy, and exactly when of several parts; single-syllable words are left out (English "long"
        is not 小龙). A word may be parts joined by an apostrophe or hyphen ("o'connor", "mary-jane"):
        a run holding such a joint is one only of whole words (not "jane" of "mary-jane"), a possessive
        "'s" after it aside."""
        tokens = list(_LATIN_TOKEN.finditer(norm))
        for i in range(len(tokens)):
            words, joined = 1, False
            for j in range(i, min(i + LATIN_NAME_PARTS, len(tokens))):
                start, end = tokens[i].start(), tokens[j].end()
                if j > i:
                    if _glued_before(norm, tokens[j].start()):
                        joined = True
                    elif norm[tokens[j - 1].end() : tokens[j].start()].strip():
                        break
                    else:
                        words += 1
                if words > LATIN_NAME_WORDS:
                    break
                if joined and (_glued_before(norm, start) or _glued_after(norm, end)):
                    continue
                key = "".join(t.group() for t in tokens[i : j + 1])
                forms = name_forms(key)
                if len(forms.syllables) < 2 and len(key) < FUZZY_MIN_CHARS:
                    continue
                multi = len(forms.syllables) >= 2 and all(s in pinyin_syllables() for s in forms.syllables)
                matches = self._lookup(
                    "" if j == i else key,
                    forms.pinyin if multi else "",
                    "",
                    forms.core_pinyin if multi else "",
                    initials=False,
                    fuzzy=True,
                )
                if matches:
                    yield start, end, matches


def _whole_words(norm: str) -> Iterable[tuple[int, int]]:
    """(start, end) of every whole Latin word of `norm`, parts joined by an apostrophe or hyphen taken
    together ("o'connor", "mary-jane"), a possessive "'s" left out ("o'connor" of "o'connor's")."""
    start = end = -1
    for word in _LATIN_WORD.finditer(norm):
        if start >= 0 and word.start() == end + 1 and _glued_after(norm, end):
            end = word.end()
            continue
        if start >= 0:
            yield start, end
        start, end = word.start(), word.end()
    if start >= 0:
        yield start, end


def _is_word_char(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LN"


def _is_latin(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _glued_before(norm: str, at: int) -> bool:
    """True when the Latin letters at `at` go on a word before them across an apostrophe or hyphen
    ("connor" in "o'connor", "jane" in "mary-jane")."""
    return at >= 2 and norm[at - 1] in _LATIN_JOINERS and _is_latin(norm[at - 2])


def _glued_after(norm: str, end: int) -> bool:
    """True when the Latin word ending at `end` goes on across an apostrophe or hyphen ("mary" in
    "mary-jane"); a possessive "'s" is no part of it ("jane's")."""
    if end + 1 >= len(norm) or norm[end] not in _LATIN_JOINERS or not _is_latin(norm[end + 1]):
        return False
    rest = _LATIN_TOKEN.match(norm, end + 1)
    return rest is None or rest.group() != _POSSESSIVE


def _is_cjk_name_dot(norm: str, at: int) -> bool:
    """True when `norm[at]` is a middle dot between two CJK characters (托马斯·穆勒)."""
    return (
        norm[at] in _CJK_NAME_DOTS
        and 0 < at < len(norm) - 1
        and bool(_CJK_CHAR.match(norm[at - 1]))
        and bool(_CJK_CHAR.match(norm[at + 1]))
    )


def _normalize_with_offsets(text: str) -> tuple[str, list[int], list[int]]:
    """NFKC + casefold grapheme by grapheme (`memory.text.mapped`: a decomposed "e\u0301" composes
    to é, as `name_key` composes the names), with the original start and end of the grapheme every
    output character came from. Invisible format characters (zero-width space and joiner, direction
    marks) are left out, as `name_key` leaves them out of the names: "小\u200b红" is 小红."""
    mapped = normalize_mapped(text)
    kept = [i for i, ch in enumerate(mapped.text) if unicodedata.category(ch) != "Cf"]
    return (
        "".join(mapped.text[i] for i in kept),
        [mapped.starts[i] for i in kept],
        [mapped.ends[i] for i in kept],
    )


def _char_pinyin(norm: str) -> list[str]:
    """One toneless syllable per character for CJK characters, "" for the rest."""
    units = [""] * len(norm)
    for run in re.finditer(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]+", norm):
        syllables = to_pinyin(run.group(), split_unknown=True)
        if len(syllables) != len(run.group()):
            continue
        for offset, syllable in enumerate(syllables):
            units[run.start() + offset] = syllable.replace("ü", "v")
    return units


def _jieba_spans(norm: str) -> list[tuple[int, int]]:
    words("")  # makes sure jieba is initialised with the project's settings
    # Only dictionary words count: jieba's HMM glues unknown names to their verb (小红住 | 在 | 上海), and
    # its Viterbi pass is quadratic in a run of characters its dictionary cuts one by one ("叫我" * 9,500
    # took 1.5 s here alone). Without it the dictionary words are the same.
    return [
        (start, end)
        for tok, start, end in jieba.tokenize(norm, HMM=False)
        if end - start >= 2 and dictionary_frequency(tok)
    ]


def _is_everyday_word(piece: str) -> bool:
    """One Latin word English uses every day ("will", "mark"), a name only where written as one."""
    return piece.isascii() and piece.isalpha() and is_common_english(piece)


def _beside_cjk(norm: str, start: int, end: int) -> bool:
    """Whether the nearest character before or after the span, spaces aside, is Chinese: a Latin
    word there is no English prose ("sam你来了吗", "@will 在吗")."""
    before, after = norm[:start].rstrip()[-1:], norm[end:].lstrip()[:1]
    return any(_CJK_CHAR.match(ch) for ch in (before, after) if ch)


def _is_common_word(piece: str) -> bool:
    """Frequent dictionary vocabulary that is not tagged as a person name (老王 is nr, 老师 is n)."""
    if dictionary_frequency(piece) < COMMON_WORD_FREQ:
        return False
    return not dictionary_tag(piece).startswith("nr")


def _context_factor(piece: str, start: int, end: int, token_spans: list[tuple[int, int]]) -> float:
    """1.0 for a name-like span; lower for ordinary vocabulary, single characters and word parts."""
    if has_cjk(piece) and len(piece) == 1:
        return COMMON_WORD_FACTOR
    if has_cjk(piece) and _is_common_word(piece):
        return COMMON_WORD_FACTOR
    for tok_start, tok_end in token_spans:
        if tok_start <= start and end <= tok_end and (tok_end - tok_start) > (end - start):
            return INSIDE_WORD_FACTOR
    return 1.0


def _non_overlapping(found: list[Mention]) -> list[Mention]:
    chosen: list[Mention] = []
    for mention in sorted(found, key=lambda m: (-m.confidence, -(m.span[1] - m.span[0]), m.span[0])):
        if all(mention.span[1] <= c.span[0] or c.span[1] <= mention.span[0] for c in chosen):
            chosen.append(mention)
    return sorted(chosen, key=lambda m: m.span)
