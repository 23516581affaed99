"""Weighted terms of chat text: TF-IDF over jieba words with jieba's shipped IDF table.

Used for offline keywords, for reusing cached topics by content, and for the extractive summary.
Terms are normalised words (NFKC + casefold) of two or more characters that are not stop words.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache

from memory.persons.names import pos_tags
from memory.text import words

TermWeights = dict[str, float]

# Chat filler and function words that carry no topic (jieba's IDF rates unknown English words high,
# so common English words are listed too).
STOP_WORDS = frozenset(
    """
    哈哈 哈哈哈 哈哈哈哈 嘿嘿 嗯嗯 好的 好滴 可以 我们 你们 他们 她们 大家 什么 怎么 这个 那个 这样 那样 一下
    就是 还是 然后 但是 因为 所以 没有 不是 已经 现在 今天 明天 昨天 知道 觉得 真的 一个 自己 感觉 还有
    xswl yyds awsl u1s1 emo 图片 表情 捂脸 笑死 哈哈哈哈哈 确实 应该 不过 其实 而且 如果 或者 时候 东西
    the and for you are was were but not that this with have has had its
    can will just what when where who how why all any our your their there then than from into onto
    about also been being did does doing done get got going gonna let lets like one out over some
    too very yeah yes okay ok thanks thx lol again fine love used actually before after now see ever
    best off keeps keep ready day days time times way really still even much many more most good great
    nice well back make made take took want need know think thought say said tell told come came
    here these those them they she her him his would could should might must shall may which while
    only other another same such each every both either neither never always sometimes maybe
    going heading anyone someone something anything nothing everyone everything please sorry
        """.split()
)

SHORT_NAME = 5  # a word inside a name this short is taken for the name ("浩子" in "浩子hao")
_NOISE = re.compile(r"\[[^\[\]]{1,8}\]|@\S+|https?://\S+")
_DIGITS = re.compile(r"^[\d.:%]+$")
_LATIN = re.compile(r"^[a-z0-9_'.-]+$")
# English contractions: jieba cuts "isn't" into "isn" and "t", and "we're" into "we" and "re", so their
# pieces would pass for words ("isn", "don", "didn" became keywords). A negated auxiliary is a function
# word as a whole and goes; the other endings go from the word they lean on ("Liz's" → "Liz").
_NEGATED_AUXILIARY = re.compile(r"\b[a-z]+n['’]t\b", re.IGNORECASE)
_CLITIC = re.compile(r"(?<=[a-z])['’](?:s|re|ve|ll|d|m)\b", re.IGNORECASE)


@lru_cache(maxsize=1)
def _idf_table() -> tuple[Mapping[str, float], float]:
    import jieba.analyse  # loads its IDF table (~0.4 s): only when a topic is first weighed

    tfidf = jieba.analyse.default_tfidf
    return tfidf.idf_freq, float(tfidf.median_idf)


def clean(text: str) -> str:
    """Text without placeholders like [图片], @mentions and links, which say nothing of the topic."""
    return _NOISE.sub(" ", text)


def without_contractions(text: str) -> str:
    """`text` with English negated auxiliaries ("don't") left out and the other contracted endings
    ("'s", "'re", "'ll"…) taken off their word, so that no piece of a contraction is taken for a word."""
    return _CLITIC.sub("", _NEGATED_AUXILIARY.sub(" ", text))


def terms_of(text: str, names: Collection[str] = ()) -> list[str]:
    """The content words of one text, in order, repeats kept; words inside one of `names`
    (normalised speaker names: who spoke is not what was said) are left out."""
    out = []
    for word in words(without_contractions(clean(text))):
        if len(word) < 2 or word in STOP_WORDS or _DIGITS.match(word):
            continue
        if any(word == name or (word in name and len(name) <= SHORT_NAME) for name in names):
            continue
        if _LATIN.match(word) and len(word) < 3:
            continue
        out.append(word)
    return out


# jieba's tags of words that say when, who or how, never what a topic is about: time words (t),
# pronouns (r), prepositions (p), conjunctions (c), particles (u…), modal particles (y), interjections
# (e); an adverb (d) in front ("太惨", "没组会"); a number or measure word throughout ("两点", "九个").
_FUNCTION_TAG_FAMILIES = frozenset("trpcu")
_FUNCTION_TAGS = frozenset({"y", "e"})
_NUMBER_TAG_FAMILIES = frozenset("mq")
# A verb or adjective led by an adverb or pronoun ("别搞", "不吃"): the adverb's light action, no thing
# talked about, even where jieba's dictionary holds it as one word.
_LEADING_TAG_FAMILIES = frozenset("dr")


def is_topic_word(word: str) -> bool:
    """Whether a term may name what a topic is about, by jieba's tags of its own words: no time word,
    pronoun or function word in it ("昨晚", "我要", "跟磊哥", "充了"), no adverb first ("太惨", and
    "别搞" of one dictionary word), not a number or measure ("两点"). A new coinage jieba has no
    entry for is tagged by its guess, mostly a noun ("冲塔"), and kept."""
    tags = [tag for _, tag in pos_tags(word)]
    if not tags:
        return False
    if any(tag in _FUNCTION_TAGS or tag[0] in _FUNCTION_TAG_FAMILIES for tag in tags) or tags[0] == "d":
        return False
    if all(tag[0] in _NUMBER_TAG_FAMILIES for tag in tags):
        return False
    return not (len(tags) == 1 and len(word) > 1 and tags[0][0] in "va" and _led_by_adverb(word))


def _led_by_adverb(word: str) -> bool:
    first = pos_tags(word[0])
    return bool(first) and first[0][1][0] in _LEADING_TAG_FAMILIES


def idf(term: str) -> float:
    """jieba's inverse document frequency of a term (the median for unknown terms)."""
    table, median = _idf_table()
    return float(table.get(term, median))


def weigh(texts: Iterable[str], names: Collection[str] = ()) -> TermWeights:
    """TF-IDF weights of the terms of some texts taken together (tf dampened as 1 + ln tf)."""
    return weigh_terms(terms_of(text, names) for text in texts)


def weigh_terms(found: Iterable[Sequence[str]]) -> TermWeights:
    """`weigh` of texts whose terms (`terms_of`) were found already."""
    counts = Counter(term for each in found for term in each)
    return {term: (1.0 + math.log(n)) * idf(term) for term, n in counts.items()}


def top(weights: Mapping[str, float], n: int) -> list[str]:
    """The `n` heaviest terms, ties by the term itself (deterministic)."""
    return [t for t, _ in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def trimmed(weights: Mapping[str, float], n: int) -> TermWeights:
    """Only the `n` heaviest terms, rounded for storage."""
    return {t: round(float(weights[t]), 4) for t in top(weights, n)}


def merge(a: Mapping[str, float], b: Mapping[str, float]) -> TermWeights:
    """The sum of two weightings."""
    out = dict(a)
    for term, w in b.items():
        out[term] = out.get(term, 0.0) + w
    return out


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Cosine similarity of two sparse weightings (0 when either is empty)."""
    if not a or not b:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    dot = sum(w * large.get(t, 0.0) for t, w in small.items())
    if dot == 0.0:
        return 0.0
    norm = math.sqrt(sum(w * w for w in a.values())) * math.sqrt(sum(w * w for w in b.values()))
    return dot / norm


def textrank_keywords(texts: Sequence[str], n: int, names: Collection[str] = ()) -> list[str]:
    """Keywords by jieba's TextRank (nouns, verbs, place names), filtered like `terms_of`."""
    import jieba.analyse

    joined = clean("\n".join(texts))
    ranked = jieba.analyse.textrank(joined, topK=n * 3, allowPOS=("ns", "n", "vn", "v", "nr", "nz", "eng"))
    allowed = set(terms_of(joined, names))
    return [w for w in (str(r).casefold() for r in ranked) if w in allowed][:n]
