"""Meanings members give: "开炉就是去吃火锅", "yyds means 永远的神", found without a model.

A member explains a term in one of the usual forms — `X就是Y`, `X指的是Y`, `X的意思是Y`, `X是Y的意思`,
`所谓X，就是Y`, `X = Y`, `X means Y`, `X stands for Y` — or answers a question about it ("炼丹是什么意思"
→ "就是训模型啦"). `X` must be the whole subject of its clause (the start of the message or of a clause,
after an @mention or a filler such as 哈哈 or 其实), so a term is never read inside a longer word. The
meaning is the clause after the link, cut at the clause's end and at `MAX_CHARS`, between whole
graphemes, its closing particles (啦, 呀, 了 …) dropped.

Not taken: a question ("X就是Y吗？", "…对吧"), a negation ("X不是Y" has no link right after the term), a
meaning that says nothing or only points ("X就是这样", "就是那家"), the bot's own lines, forwards
(words written elsewhere), and an explanation by a member who asked about the term earlier in the
window (they are guessing). Of several
explanations of a term the latest wins: a later one is usually a correction ("不对，开炉是指…"). A bare
answer counts only for a question no one answered yet.

Pure functions on the miner's messages; the mining job stores what they find (dictionary.member_meaning).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from memory.jargon.types import MinerMessage
from memory.text import normalize, truncate

MAX_CHARS = 60
"""The longest meaning kept from a member's explanation (a cut one ends with "…")."""
ANSWER_WITHIN = 5
"""How many messages after a question about a term a bare answer ("就是训模型啦") may come."""

# Where a clause may start: the text's start, after clause punctuation or a space (an @mention ends
# with one).
_CLAUSE_BREAK = re.compile(r"[\s，,。！!？?；;：:…~～]+")
# Atomic and possessive: "哈哈哈哈…" is read one way only (tried every way it splits, a long laugh took
# seconds). At most FILLERS of them: every clause start is tried, and "哈哈，哈哈，…" read to its end
# from each start took seconds; a later start comes closer to the term.
FILLERS = 4
_FILLER = (
    r"(?:(?>哈哈+|嗯+|哦+|噢+|啊|对|其实|所以|所谓|咱们?说的|我们说的|群里说的|这里说的)\s*[，,]?\s*)"
    + f"{{0,{FILLERS}}}+"
)
# What is read after the link: the meaning's clause is cut at MAX_CHARS anyway, and reading each
# start's rest to the text's end made a 20,000-character "a就是b，a就是b，…" take seconds.
REST_CHARS = 4 * MAX_CHARS
_REST = f"(?P<rest>.{{0,{REST_CHARS}}})"
_TERM = r"[“\"「『‘'《]?(?P<term>[^\s，,。！!？?；;：:、“”\"「」『』‘’《》()（）]{1,64}?)[”\"」』’'》]?"
_LINK = (
    r"(?:\s*[，,])?\s*(?:(?P<link>的意思就是|的意思是|意思就是|意思是|指的就是|指的是|就是指|就是说|也就是|就是"
    r"|是指|即是|等于|=|＝)|(?P<of>是)|(?<=\s)(?:means|stands\s+for|is\s+short\s+for|refers\s+to)\s)"
)
_EXPLAINED = re.compile(_FILLER + _TERM + _LINK + r"\s*" + _REST, re.S | re.I)
_ASKED = re.compile(
    _FILLER
    + r"(?:(?:啥|什么)(?:叫|是)\s*"
    + _TERM
    + r"(?=\s*(?:[?？，,。！!~～]|啊|呀|呢|$))|"
    + _TERM.replace("term", "term2")
    + r"\s*(?:到底|究竟)?(?:是(?:啥|什么)(?:意思)?|(?:啥|什么)意思)"
    + r"|what\s+(?:does|do)\s+(?P<term3>\S+?)\s+mean|what(?:'s|\s+is)\s+(?:an?\s+)?(?P<term4>\S+?)\s*[?？])",
    re.I,
)
# A bare answer right after a question: "就是训模型啦", "@安妮 指的是…".
_ANSWER = re.compile(
    r"(?:@\S+\s+)*+" + _FILLER + r"(?:就是指|就是说|就是|指的是|是指|意思是|it\s+means|means)\s*" + _REST,
    re.S | re.I,
)
_CLAUSE_END = re.compile(r"[，,。！!？?；;\n～~…()（）]|\.(?=\s|$)")
_SENTENCE_END = re.compile(r"[。！!\n]|\.(?=\s|$)")
_ASKING_END = ("吗", "么", "吧", "呢", "对吧", "是吧", "对不对", "是不是", "不是吗")
_PARTICLES = ("哈哈", "啦", "呀", "哈", "啊", "哦", "噢", "嘛", "了", "的啦")
_EMPTY = {"这样", "这个", "那个", "这个意思", "那个意思", "这么回事", "如此", "一样", "真的", "对的", "是的"}
_POINTING = re.compile(r"[这那][个家样种些位里儿边]?")  # "就是那家": points, says nothing
_QUESTION_WORDS = ("啥", "什么", "哪", "谁", "怎么", "what", "which", "who", "how")


@dataclass(frozen=True, slots=True)
class MemberMeaning:
    """A meaning a member gave: `term` normalised, `meaning` as they wrote it, `message_key` the
    message saying it (the evidence)."""

    term: str
    meaning: str
    message_key: str
    speaker: str


def _clause_starts(text: str) -> list[int]:
    return [0, *(m.end() for m in _CLAUSE_BREAK.finditer(text) if m.end() < len(text))]


def _at_clause_starts(pattern: re.Pattern[str], may: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """The matches of `pattern` at each clause start of `text`; none when `may` finds nothing in it."""
    if may.search(text):
        for start in _clause_starts(text):
            if (match := pattern.match(text, start)) is not None:
                yield match


def _meaning(rest: str, of: bool) -> str | None:
    """The meaning at the start of `rest`: its clause, without closing particles; None when the clause
    asks rather than says, or says nothing."""
    end = _CLAUSE_END.search(rest)
    clause = rest[: end.start()] if end else rest
    if any(mark in _SENTENCE_END.split(rest, maxsplit=1)[0] for mark in "?？"):
        return None
    text = clause.strip()
    if of:
        if not text.endswith("的意思"):
            return None
        text = text[: -len("的意思")].strip()
    if text.endswith(_ASKING_END) or text.lower().startswith(_QUESTION_WORDS):
        return None
    stripped = True
    while stripped:
        stripped = False
        for particle in _PARTICLES:
            if text.endswith(particle) and len(text) > len(particle):
                text, stripped = text[: -len(particle)].rstrip(), True
    if not text or text in _EMPTY or _POINTING.fullmatch(text):
        return None
    return truncate(text, MAX_CHARS)


def _own_words(message: MinerMessage) -> bool:
    return not message.is_bot and not message.forwarded


# Words every explanation or question holds: most messages hold none and are not parsed further.
_MAY_EXPLAIN = re.compile(r"就是|指|意思|等于|即是|[=＝]|means|stands|short|refers", re.I)
_MAY_ASK = re.compile(r"啥|什么|what", re.I)


def asked_about(text: str) -> list[str]:
    """The terms a message asks the meaning of ("X是什么意思", "啥叫X", "what does X mean"), normalised."""
    found: list[str] = []
    for match in _at_clause_starts(_ASKED, _MAY_ASK, text):
        term = next(g for g in match.group("term", "term2", "term3", "term4") if g)
        if normalize(term):
            found.append(normalize(term))
    return found


def explained_in(text: str) -> list[tuple[str, str]]:
    """(normalised term, meaning) for each explanation `text` gives, in order."""
    found: list[tuple[str, str]] = []
    for match in _at_clause_starts(_EXPLAINED, _MAY_EXPLAIN, text):
        term = normalize(match.group("term"))
        meaning = _meaning(match.group("rest"), match.group("of") is not None)
        if term and meaning is not None and normalize(meaning) != term:
            found.append((term, meaning))
    return found


def member_meanings(window: Sequence[MinerMessage]) -> dict[str, MemberMeaning]:
    """The latest meaning members gave each term in `window` (keyed by the normalised term)."""
    asked: list[tuple[int, str, str]] = []  # (index, term, who asked)
    open_questions: list[tuple[int, str, str]] = []  # those no one answered yet
    found: dict[str, MemberMeaning] = {}

    def heard(term: str, meaning: str, message: MinerMessage) -> None:
        found[term] = MemberMeaning(term, meaning, message.key, message.speaker)
        open_questions[:] = [q for q in open_questions if q[1] != term]

    for index, message in enumerate(window):
        if not _own_words(message):
            continue
        askers = {term for _, term, who in asked if who == message.speaker}
        for term, meaning in explained_in(message.text):
            if term not in askers:
                heard(term, meaning, message)
        answer = _ANSWER.match(message.text)
        if answer is not None:
            recent = (q for q in reversed(open_questions) if index - q[0] <= ANSWER_WITHIN)
            question = next((q for q in recent if q[2] != message.speaker), None)
            answered = _meaning(answer.group("rest"), False)
            if question is not None and answered is not None and normalize(answered) != question[1]:
                heard(question[1], answered, message)
        questions = [(index, term, message.speaker) for term in asked_about(message.text)]
        asked += questions
        open_questions += questions
    return found
