"""jieba-based tokens for the full-text index and for queries; a cheap token estimate for budgets."""

from __future__ import annotations

import logging
import re
from functools import lru_cache

import jieba

from memory.text.normalize import normalize

jieba.setLogLevel(logging.WARNING)

_WORD = re.compile(r"\w", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_CJK_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]+")
# jieba's tags of characters that only serve other words: particles, prepositions, pronouns,
# conjunctions, modal particles, interjections, adverbs, numbers and measure words.
_FUNCTION_TAG_FAMILIES = frozenset("uprcyedmq")
_FUNCTION = "f"
_LATIN_WORD = re.compile(r"[A-Za-z0-9_]+")
# Characters neither ASCII nor CJK, and those of them beyond the basic plane (emoji, regional indicators).
_WIDE = re.compile(r"[^\x00-\x7f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_ASTRAL = re.compile(r"[\U00010000-\U0001ffff\U00030000-\U0010ffff]")


@lru_cache(maxsize=1)
def _ready() -> bool:
    jieba.initialize()
    return True


def prepare() -> None:
    """Load jieba's dictionary and part-of-speech tags now (about a second, once per process) instead
    of inside the first message that needs them. Safe from any thread: jieba builds its dictionary
    under its own lock and once, and the tags load under the import lock."""
    _ready()
    import jieba.posseg  # noqa: F401  (its module body loads the tag table)


def words(text: str) -> list[str]:
    """Word tokens of normalised text (jieba precise mode), punctuation and spaces dropped."""
    _ready()
    return [tok for tok in jieba.lcut(normalize(text)) if _WORD.search(tok)]


INDEX_VERSION = 2
"""The version of `index_text`'s tokens: bump it with any change to what a text is indexed as (the
full-text rows of a database stamped with an older one are re-indexed in the background,
memory.reindex). 1: jieba's search-mode words; 2: and the new-word pieces."""


def index_text(text: str) -> str:
    """The space-joined tokens stored in the FTS index (Chinese and English alike), of the whole text:
    every word of a message (up to a million characters, about two seconds of jieba) or of a long
    topic is searchable. jieba's search-mode words first (`word_terms`), then the pieces a word new to
    jieba may hide in (`_new_word_pieces`), so that a slang word is found however jieba cut it."""
    _ready()
    cut = _cut(text)
    return " ".join([*_search_mode(cut), *_new_word_pieces(cut)])


def word_terms(text: str) -> list[str]:
    """Distinct jieba search-mode words of `text` in order (the index's words, without the new-word
    pieces): what a phrase is matched as."""
    _ready()
    return list(dict.fromkeys(_search_mode(_cut(text))))


def search_terms(query: str) -> list[str]:
    """Distinct query tokens in order, as the index would have stored them."""
    return list(dict.fromkeys(index_text(query).split()))


def _cut(text: str) -> list[str]:
    return jieba.lcut(normalize(text))


def _search_mode(cut: list[str]) -> list[str]:
    """jieba's search mode (`jieba.cut_for_search`) of a precise-mode cut: a long word's dictionary
    2- and 3-grams, then the word; punctuation and spaces dropped."""
    freq = jieba.dt.FREQ
    out: list[str] = []
    for word in cut:
        if not _WORD.search(word):
            continue
        for n in (2, 3):
            if len(word) > n:
                out += [gram for i in range(len(word) - n + 1) if freq.get(gram := word[i : i + n])]
        out.append(word)
    return out


def _new_word_pieces(cut: list[str]) -> list[str]:
    """Two-character pieces where jieba's cut may hide a word its dictionary lacks, which it cuts one
    way in one sentence and another way in the next ("冲塔" as 冲塔输, 订冲塔, or 要冲|塔; "上香" as
    上|香): every 2-gram of a Chinese word jieba does not know (it glued it from characters), and the
    2-gram across the edge of a lone Chinese character that names something (not a verb, nor a
    function character: particle, pronoun, preposition, adverb, number…) and its Chinese neighbour
    (not a function character)."""
    freq = jieba.dt.FREQ
    out: list[str] = []
    for i, word in enumerate(cut):
        if len(word) > 2 and not freq.get(word) and _CJK_WORD.fullmatch(word):
            out += [word[j : j + 2] for j in range(len(word) - 1) if not freq.get(word[j : j + 2])]
        if i == 0 or not (len(word) == 1 or len(cut[i - 1]) == 1):
            continue
        left, right = cut[i - 1][-1], word[0]
        if not _CJK_WORD.fullmatch(left + right) or _FUNCTION in (_tag(left), _tag(right)):
            continue
        if all(_tag(char) != "v" for char in {cut[i - 1], word} if len(char) == 1):
            out.append(left + right)
    return out


def dictionary_frequency(word: str) -> int:
    """How often jieba's dictionary counts `word`; 0 for no word of it (a prefix of one counts 0)."""
    _ready()
    return int(jieba.dt.FREQ.get(word) or 0)


def dictionary_tag(word: str) -> str:
    """jieba's dictionary part-of-speech tag of `word` as a whole ("nr" for 老王, "n" for 老师), ""
    for a word its dictionary lacks: a look-up, no cutting."""
    return str(_word_tag_table().get(word, ""))


@lru_cache(maxsize=1)
def _word_tag_table() -> dict[str, str]:
    _ready()
    import jieba.posseg

    return jieba.posseg.dt.word_tag_tab


@lru_cache(maxsize=65536)
def _tag(char: str) -> str:
    """The family of jieba's dictionary tag of a character: "f" (function), "v" (verb) or "" (other)."""
    tag = dictionary_tag(char) or "x"
    if tag[0] in _FUNCTION_TAG_FAMILIES or tag == "zg":
        return _FUNCTION
    return "v" if tag[0] == "v" else ""


def estimate_tokens(text: str) -> int:
    """A model-independent token estimate: one per CJK character, about four ASCII characters per
    token, and one per other character, two beyond the basic plane: an emoji, a flag's letters, kana,
    Hangul or full-width punctuation is a token or more to a model's tokenizer, never a quarter of one
    (a message of emoji alone was estimated at an eighth of its cost)."""
    cjk = len(_CJK.findall(text))
    wide = len(_WIDE.findall(text))
    astral = len(_ASTRAL.findall(text))
    return cjk + wide + astral + (len(text) - cjk - wide + 3) // 4
