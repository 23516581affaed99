"""Name forms shared by naming and alias matching: display cleanup, match keys, pinyin and diminutives.

A name has several keys, from strict to loose:
- `name_key`: NFKC + casefold with spaces and punctuation removed ("Xiao Hong" → "xiaohong");
- `pinyin_key`: the toneless pinyin of every CJK character, Latin kept ("小红" → "xiaohong");
- `core_chars` / `core_pinyin`: the key with a diminutive prefix (小/阿/老) or suffix (子/儿) removed
  and reduplication collapsed, so 小红, 红红, 阿红, 红儿, xiaohong and hong share the core "hong"; the
  characters also lose an honorific suffix of a given name (姐/哥: 红姐, 杰哥; `without_honorific`),
  not its pinyin (jie and ge are given names too: 王杰), nor a title after a surname (张总, 王老师: many
  share a surname);
- `reduplicated_head`: the doubled character opening a four-character AABB name (红 of 红红火火, whose
  members call it 红红), "" for any other name;
- `initials`: the first letter of every syllable ("小红" → "xh");
- `unaccented`: a Latin key without its accents ("José" → "jose"), empty when that is the key itself.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import regex

from memory.text import dictionary_frequency, drop_invisible, normalize

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]+")
_LATIN_RUN = re.compile(r"[a-z]+")
_GRAPHEME = regex.compile(r"\X")
_SPACES = re.compile(r"\s+")

DIMINUTIVE_PREFIX_CHARS = ("小", "阿", "老")
DIMINUTIVE_SUFFIX_CHARS = ("子", "儿")
HONORIFIC_SUFFIX_CHARS = ("姐", "哥")
_PREFIX_SYLLABLES = frozenset({"xiao", "a", "lao"})
_SUFFIX_SYLLABLES = frozenset({"zi", "er"})


def has_cjk(text: str) -> bool:
    """True when `text` contains a CJK ideograph."""
    return _CJK.search(text) is not None


def _is_decoration(grapheme: str) -> bool:
    """Emoji, pictographs, symbols and punctuation: nothing a person could be called by."""
    return not any(unicodedata.category(ch)[0] in "LN" for ch in grapheme)


def clean_name(raw: str) -> str:
    """A display name: NFKC, control characters and those that show nothing dropped (a zero-width
    joiner only inside an emoji, `drop_invisible`), whitespace collapsed, and emoji, symbols
    and punctuation trimmed from both ends. Empty when nothing name-like (a letter or digit) is left."""
    text = drop_invisible(unicodedata.normalize("NFKC", raw or ""))
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf", "Cs") or ch == "\u200d")
    text = _SPACES.sub(" ", text).strip()
    graphemes = _GRAPHEME.findall(text)
    start, end = 0, len(graphemes)
    trimmed = None
    while trimmed != (start, end):  # until nothing is left to trim: "[阿红]:" loses ":", then "[]"
        trimmed = start, end
        while end - start > 2 and _PAIRS.get(graphemes[start]) == graphemes[end - 1]:
            start, end = start + 1, end - 1  # a name wrapped whole in brackets: 【阿红】
        while start < end and _is_decoration(graphemes[start]) and not _closed_inside(graphemes, start, end):
            start += 1
        while (
            end > start and _is_decoration(graphemes[end - 1]) and not _opened_inside(graphemes, start, end)
        ):
            end -= 1
    return "".join(graphemes[start:end]).strip()


_PAIRS = {"(": ")", "[": "]", "{": "}", "「": "」", "【": "】", "《": "》", "〈": "〉", "“": "”", "‘": "’"}
_OPENERS = {close: open_ for open_, close in _PAIRS.items()}


def _closed_inside(graphemes: list[str], start: int, end: int) -> bool:
    """A leading bracket whose partner closes later in the name belongs to it ("(汤姆)Tom")."""
    closer = _PAIRS.get(graphemes[start])
    return closer is not None and closer in graphemes[start + 1 : end]


def _opened_inside(graphemes: list[str], start: int, end: int) -> bool:
    """A trailing bracket that closes one opened in the name belongs to it ("Tom(汤姆)")."""
    opener = _OPENERS.get(graphemes[end - 1])
    return opener is not None and opener in graphemes[start : end - 1]


def name_key(name: str) -> str:
    """The strict match key: normalised, with whitespace, punctuation and emoji removed."""
    return "".join(ch for ch in normalize(name) if unicodedata.category(ch)[0] in "LN")


@lru_cache(maxsize=1)
def pinyin_syllables() -> frozenset[str]:
    """Every toneless pinyin syllable pypinyin knows (built once, ~0.3 s)."""
    from pypinyin.contrib.tone_convert import to_normal
    from pypinyin.pinyin_dict import pinyin_dict

    found: set[str] = set()
    for readings in pinyin_dict.values():
        for reading in readings.split(","):
            syllable = to_normal(reading).replace("ü", "v")
            if syllable.isascii() and syllable.isalpha():
                found.add(syllable)
    return frozenset(found)


@lru_cache(maxsize=4096)
def split_pinyin(run: str) -> tuple[str, ...] | None:
    """Split a lowercase Latin run into pinyin syllables, preferring long syllables first;
    None when the run is not pinyin (e.g. "alex" or "bob")."""
    syllables = pinyin_syllables()
    # next_end[start]: where the syllable starting at `start` ends in a split of run[start:], -1 when
    # there is none. One end per place, not the split itself: copying the rest of the split at each
    # place took memory growing with the square of the run (1.4 GB for a pasted "http://aaa…" of 19,000).
    next_end = [-1] * len(run) + [len(run)]
    for start in range(len(run) - 1, -1, -1):
        for end in range(min(len(run), start + 6), start, -1):
            if next_end[end] >= 0 and run[start:end] in syllables:
                next_end[start] = end
                break
    if next_end[0] < 0:
        return None
    parts: list[str] = []
    start = 0
    while start < len(run):
        parts.append(run[start : next_end[start]])
        start = next_end[start]
    return tuple(parts)


@dataclass(frozen=True, slots=True)
class NameForms:
    """All match keys of one name (see the module docstring). Empty strings when not applicable."""

    key: str
    pinyin: str
    syllables: tuple[str, ...]
    core_chars: str
    core_pinyin: str
    initials: str
    is_cjk: bool
    unaccented: str = ""
    reduplicated_head: str = ""


def _collapse_repeats(units: list[str]) -> list[str]:
    collapsed: list[str] = []
    for unit in units:
        if not collapsed or collapsed[-1] != unit:
            collapsed.append(unit)
    return collapsed


def _strip_diminutive(units: list[str], prefixes: frozenset[str], suffixes: frozenset[str]) -> list[str]:
    units = list(units)
    if len(units) >= 2 and units[0] in prefixes:
        units = units[1:]
    if len(units) >= 2 and units[-1] in suffixes:
        units = units[:-1]
    return _collapse_repeats(units)


def to_pinyin(text: str, *, split_unknown: bool) -> list[str]:
    """Toneless pinyin, one syllable per CJK character; a run without pinyin is kept whole, or split
    into its characters with `split_unknown`."""
    from pypinyin import lazy_pinyin  # its phrase tables take ~0.4 s to load: only when first needed

    keep = list if split_unknown else (lambda run: [run])
    # pypinyin accepts a list from `errors`; its type hints say str
    return list(lazy_pinyin(text, errors=keep))  # type: ignore[arg-type]


def _syllables_of(key: str) -> tuple[str, ...]:
    """Syllables for a key: CJK characters through pypinyin, Latin runs split as pinyin when they
    are pinyin, otherwise kept whole; digits kept as they are."""
    units: list[str] = []
    for piece in to_pinyin(key, split_unknown=False):
        piece = piece.lower().replace("ü", "v")
        if not piece:
            continue
        if _LATIN_RUN.fullmatch(piece):
            split = split_pinyin(piece)
            units.extend(split if split else (piece,))
        else:
            units.append(piece)
    return tuple(units)


@lru_cache(maxsize=8192)
def name_forms(name: str) -> NameForms:
    """Compute (and cache) the match keys of `name`."""
    key = name_key(name)
    cjk = has_cjk(key)
    syllables = _syllables_of(key) if key else ()
    pinyin = "".join(syllables)
    core_chars = ""
    if cjk and _CJK_RUN.fullmatch(key):
        core_chars = "".join(
            _strip_diminutive(
                list(without_honorific(key)),
                frozenset(DIMINUTIVE_PREFIX_CHARS),
                frozenset(DIMINUTIVE_SUFFIX_CHARS),
            )
        )
    all_pinyin = bool(syllables) and all(s in pinyin_syllables() for s in syllables)
    core_pinyin = (
        "".join(_strip_diminutive(list(syllables), _PREFIX_SYLLABLES, _SUFFIX_SYLLABLES))
        if all_pinyin
        else ""
    )
    initials = "".join(s[0] for s in syllables) if cjk and all_pinyin and len(syllables) >= 2 else ""
    return NameForms(
        key,
        pinyin,
        syllables,
        core_chars,
        core_pinyin,
        initials,
        cjk,
        unaccented(key),
        _reduplicated_head(key),
    )


def without_honorific(chars: str) -> str:
    """`chars` without a given name's honorific suffix (红姐 → 红, 杰哥 → 杰), unless the whole is a word
    of jieba's dictionary, everyday vocabulary rather than someone's name (帅哥, 大姐, 表姐, 小哥)."""
    if len(chars) >= 2 and chars.endswith(HONORIFIC_SUFFIX_CHARS):
        if not dictionary_frequency(chars):
            return chars[:-1]
    return chars


def _reduplicated_head(key: str) -> str:
    """A of an AABB key of CJK characters (红 of 红红火火), else ""."""
    if len(key) == 4 and _CJK_RUN.fullmatch(key) and key[0] == key[1] and key[2] == key[3] != key[0]:
        return key[0]
    return ""


def unaccented(key: str) -> str:
    """`key` without accents when that leaves plain ASCII ("zoë" → "zoe", "nguyễn" → "nguyen"), else ""
    (no accents to remove, or another script: a kana's voicing mark is no accent)."""
    bare = "".join(
        ch for ch in unicodedata.normalize("NFD", key) if not unicodedata.category(ch).startswith("M")
    )
    return bare if bare != key and bare.isascii() else ""


def grapheme_len(text: str) -> int:
    """Length in user-perceived characters."""
    return len(_GRAPHEME.findall(text))


@lru_cache(maxsize=1)
def _posseg() -> Any:  # jieba has no type hints
    import jieba.posseg

    from memory.text import words

    words("")  # initialise jieba with the project's logging settings
    return jieba.posseg


def prepare() -> None:
    """Load pypinyin's tables, the pinyin syllables, jieba's part-of-speech tags, wordfreq's English
    list and the nicknames table now (about a second and a half, once per process) instead of inside the
    first message or reply that matches a name. Safe from any thread (imports run under the import lock;
    the caches hold equal values)."""
    from memory.persons.english import is_common_english, nickname_relatives

    to_pinyin("张三", split_unknown=True)
    pinyin_syllables()
    _posseg()
    is_common_english("name")
    nickname_relatives("name")


def pos_tags(text: str) -> list[tuple[str, str]]:
    """jieba part-of-speech tags: (word, flag) pairs, e.g. 张三 → nr (person), 北京 → ns (place)."""
    return [(pair.word, pair.flag) for pair in _posseg().lcut(text)]
