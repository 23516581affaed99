"""Query keywords: jieba tokens without stop words, English words reduced to their Porter stem as
the full-text index stores them, and the keyword-overlap signal (the share of query keywords a
memory contains, each keyword weighted by how rare it is in the chat)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer

from memory.storage.fts import quote_term
from memory.text import search_terms

# Function words that carry no topic: English question/auxiliary words, Chinese particles, and the words
# a question uses for the chat itself (大家聊了什么, 群里讨论过的事).
STOP_WORDS = frozenset(
    """
    a an the and or but if then so than that this these those there here of to in on at by for from with
    about into over after before as is are was were be been being am do does did doing done have has had
    having i me my mine we us our you your yours he him his she her hers it its they them their what
    which who whom whose when where why how not no yes can could would should will shall may might must
    any some all each both more most other such only own same too very just also ever now ago s t d ll
    m re ve don didn doesn isn wasn aren weren won wouldn couldn shouldn let lets get got go went gone
    tell say said like kind sort thing things one ones anything something someone somebody
    talk talks talked talking discuss discussed discussing mention mentioned mentioning happen happened
    happening
    的 了 是 我 你 他 她 它 们 我们 你们 他们 她们 吗 呢 吧 啊 呀 哦 嗯 么 什么 怎么 怎样 怎么样 哪 哪个
    哪些 哪里 哪儿 谁 为什么 为啥 啥 在 有 和 与 跟 及 就 都 也 还 又 这 那 这个 那个 这些 那些 个 一 一个
    不 没 没有 把 被 给 让 对 说 过 着 得 地 之 去 来 到 要 会 能 而 或 或者 呢 嘛 吗 么 哈 啦 呗 来着
    一下 知道 记得 还记得 上次 下次 这次 哪天 几点 几号 什么时候 时候 最后 到底 来着 当时
    大家 群里 聊 聊过 聊天 讨论 提到 提过 讲 讲过 说过 发生 事 事情 些 一些
    """.split()
)

_LATIN = re.compile(r"[a-z0-9]+")
_LATIN_WORD = re.compile(r"[a-z]+")
_PORTER = snowballstemmer.stemmer("porter")
MIN_STEMMED = 3


@lru_cache(maxsize=65536)
def stem(term: str) -> str:
    """The Porter stem of an English word, as the full-text index (FTS5 porter) stores it; other
    tokens, and words too short to stem, unchanged ("painting" → "paint", "families" → "famili")."""
    if len(term) < MIN_STEMMED or not _LATIN_WORD.fullmatch(term):
        return term
    return str(_PORTER.stemWord(term)) or term


@dataclass(frozen=True, slots=True)
class Keyword:
    """A query keyword: the token as indexed, and the form matched (the stem of an English word)."""

    term: str
    match: str

    @property
    def latin(self) -> bool:
        return _LATIN.fullmatch(self.term) is not None

    def fts(self) -> str:
        """This keyword as one safe FTS5 term (quoted; the index stems it as it stemmed the text).
        A lone Chinese character also matches the words it begins: jieba cuts "订的位" to 订, while
        the message said 订位 or 订好."""
        if len(self.term) == 1 and not self.latin and self.term.isalpha():
            return quote_term(self.term) + "*"
        return quote_term(self.term)


def remove_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` with the given character spans blanked out (names and time words are not keywords)."""
    chars = list(text)
    for start, end in spans:
        for i in range(start, min(end, len(chars))):
            chars[i] = " "
    return "".join(chars)


def query_keywords(text: str, use_stems: bool = True, stop_words_alone: bool = True) -> list[Keyword]:
    """Distinct non-stop-word tokens of a query, in order; when every one is a stop word, all its
    tokens, or none without `stop_words_alone` (a question whose time or person already says what it
    is after: in "上周三说了什么" the words 说, 了 and 什么 would match half the chat). With `use_stems`,
    English words that share a stem count once and match by stem in the overlap signal; without, they
    match as whole words."""
    terms = search_terms(text)
    kept = [t for t in terms if t not in STOP_WORDS and not (len(t) == 1 and t.isascii())]
    if not kept and stop_words_alone:
        kept = terms
    found: dict[str, Keyword] = {}
    for term in kept:
        matched = stem(term) if use_stems else term
        found.setdefault(matched, Keyword(term, matched))
    return list(found.values())


def match_any(keywords: Sequence[Keyword]) -> str | None:
    """An FTS5 MATCH expression matching any keyword, or None when there is none."""
    if not keywords:
        return None
    return " OR ".join(k.fts() for k in keywords)


def _latin_forms(normalized_doc: str) -> set[str]:
    """The whole Latin words of a document, and their stems."""
    found = set(_LATIN.findall(normalized_doc))
    return found | {stem(word) for word in found}


def keyword_overlap(
    keywords: Sequence[Keyword], normalized_doc: str, weights: Mapping[str, float] | None = None
) -> float:
    """The share of query keywords found in an already-normalised document (0.0–1.0): English words
    as whole words or by stem ("car" is not in "care"), other text as a substring. With `weights`
    (keyword match → weight, e.g. its rarity in the chat), the weighted share: a memory
    holding the rare word of a question outranks one holding only its everyday words."""
    if not keywords:
        return 0.0
    forms = _latin_forms(normalized_doc) if any(k.latin for k in keywords) else set()
    found = [k for k in keywords if (k.match in forms if k.latin else k.match in normalized_doc)]
    if weights:
        total = sum(weights.get(k.match, 1.0) for k in keywords)
        if total > 0:
            return sum(weights.get(k.match, 1.0) for k in found) / total
    return len(found) / len(keywords)
