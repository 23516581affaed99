"""Query keywords: jieba tokens without stop words, with a light English stem for prefix matching,
and the keyword-overlap signal (the share of query keywords a memory contains)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memory.storage.fts import quote_term
from memory.text import search_terms

# Function words that carry no topic: English question/auxiliary words and Chinese particles.
STOP_WORDS = frozenset(
    """
    a an the and or but if then so than that this these those there here of to in on at by for from with
    about into over after before as is are was were be been being am do does did doing done have has had
    having i me my mine we us our you your yours he him his she her hers it its they them their what
    which who whom whose when where why how not no yes can could would should will shall may might must
    any some all each both more most other such only own same too very just also ever now ago s t d ll
    m re ve don didn doesn isn wasn aren weren won wouldn couldn shouldn let lets get got go went gone
    tell say said like kind sort thing things one ones anything something someone somebody
    的 了 是 我 你 他 她 它 们 我们 你们 他们 她们 吗 呢 吧 啊 呀 哦 嗯 么 什么 怎么 怎样 怎么样 哪 哪个
    哪些 哪里 哪儿 谁 为什么 为啥 啥 在 有 和 与 跟 及 就 都 也 还 又 这 那 这个 那个 这些 那些 个 一 一个
    不 没 没有 把 被 给 让 对 说 过 着 得 地 之 去 来 到 要 会 能 而 或 或者 呢 嘛 吗 么 哈 啦 呗 来着
    一下 知道 记得 还记得
    """.split()
)

_LATIN = re.compile(r"[a-z0-9]+")
_SUFFIXES = (
    "ations",
    "ation",
    "ings",
    "ing",
    "ions",
    "ion",
    "ies",
    "ied",
    "ers",
    "er",
    "ed",
    "es",
    "ly",
    "y",
    "s",
)
MIN_STEM = 4


def stem(term: str) -> str:
    """A crude English stem used only as a prefix ("painting" → "paint", "families" → "famil")."""
    if not _LATIN.fullmatch(term) or term.isdigit():
        return term
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= (3 if suffix == "s" else MIN_STEM):
            return term[: -len(suffix)]
    return term


@dataclass(frozen=True, slots=True)
class Keyword:
    """A query keyword: the token as indexed, and the form matched (a prefix for Latin words)."""

    term: str
    match: str
    prefix: bool

    def fts(self) -> str:
        """This keyword as one safe FTS5 term (quoted; `*` for a prefix)."""
        return quote_term(self.match) + ("*" if self.prefix else "")


def remove_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` with the given character spans blanked out (names and time words are not keywords)."""
    chars = list(text)
    for start, end in spans:
        for i in range(start, min(end, len(chars))):
            chars[i] = " "
    return "".join(chars)


def query_keywords(text: str, use_stems: bool = True) -> list[Keyword]:
    """Distinct non-stop-word tokens of a query, in order; all its tokens when every one is a stop word."""
    terms = search_terms(text)
    kept = [t for t in terms if t not in STOP_WORDS and not (len(t) == 1 and t.isascii())] or terms
    found: dict[str, Keyword] = {}
    for term in kept:
        matched = stem(term) if use_stems else term
        prefix = use_stems and _LATIN.fullmatch(term) is not None and not term.isdigit()
        found.setdefault(matched, Keyword(term, matched, prefix))
    return list(found.values())


def match_any(keywords: Sequence[Keyword]) -> str | None:
    """An FTS5 MATCH expression matching any keyword, or None when there is none."""
    if not keywords:
        return None
    return " OR ".join(k.fts() for k in keywords)


def _present(keyword: Keyword, normalized_doc: str) -> bool:
    if keyword.prefix:
        return re.search(r"(?<![a-z0-9])" + re.escape(keyword.match), normalized_doc) is not None
    return keyword.match in normalized_doc


def keyword_overlap(keywords: Sequence[Keyword], normalized_doc: str) -> float:
    """The share of query keywords found in an already-normalised document (0.0–1.0)."""
    if not keywords:
        return 0.0
    return sum(1 for k in keywords if _present(k, normalized_doc)) / len(keywords)
