"""Who said it: a message as the person memory sees it, and the parts of its text that are the
speaker's own words rather than quoted, forwarded or reported speech (MaiBot #1734: a quote must never
become a fact about the person quoting it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import jieba

import memory.text  # noqa: F401  (sets jieba's log level)
from memory.text import plain_apostrophes
from memory.types import ChatMessage, SegmentKind

_QUOTE_PAIRS = {"“": "”", "「": "」", "『": "』", '"': '"', "‘": "’", "《": "》"}
_TITLE_QUOTES = {"《"}
_QUOTE_LINE = re.compile(r"^[ \t]*(?:>|＞|&gt;)[^\n]*", re.MULTILINE)
_FIRST_PERSON = re.compile(r"我|俺|(?i:\b(?:i|i'm|i've|i'd|my|me|mine|myself)\b)")
_QQ_QUOTE_HEAD = re.compile(r"^\s*[^\s:：]{1,24}[:：]")
# A reporting verb: the rest of its sentence is someone else's words (他说…, she said …, 听说…).
_REPORT_VERBS_ZH = frozenset(
    {"说", "讲", "说过", "说道", "写道", "表示", "提到", "告诉", "觉得", "认为", "问", "称"}
)
_ADVERBS_ZH = frozenset({"也", "还", "都", "就", "刚", "刚才", "早就", "一直", "曾经", "又"})
_TO_WHOM_ZH = frozenset({"跟", "和", "对", "给", "同"})
_HEARSAY_ZH = re.compile(r"听说|据说|听人说|传闻|转发|转自")
# The subject starts where no word or apostrophe stands before it: "\b" let it start after every
# apostrophe of "a'a'a'…", each start reading to the run's end (a member's 20,000 characters took seconds).
_REPORT_EN = re.compile(
    r"(?i:(?<![\w'])'*(?P<subj>[a-z][\w']*+)\s+(?P<verb>said|says|told\s+(?:me|us)|wrote|writes|mentioned|claims?|"
    r"thinks?|asked)\b|\baccording\s+to\b|\bforwarded\b|\bquote\b)"
)
_SENTENCE_END = re.compile(r"[。！？!?；;\n]|\.(?=\s|$)")
_FIRST_PERSON_SUBJECTS_ZH = ("我", "我们", "咱", "咱们", "俺")
_FIRST_PERSON_SUBJECTS_EN = frozenset({"i", "we"})


@dataclass(frozen=True, slots=True)
class Utterance:
    """One message for the person memory.

    `key` is the stored message's key (facts and aliases keep it as evidence); ids are person ids.
    `mentioned_ids` are the people @-mentioned, in order; `reply_to_id` is the sender of the message
    replied to; `forwarded` marks a message that is wholly forwarded content (nothing in it is the
    sender's own words).
    """

    key: str
    speaker_id: str
    text: str
    time: datetime
    mentioned_ids: tuple[str, ...] = ()
    reply_to_id: str | None = None
    forwarded: bool = False

    def __post_init__(self) -> None:
        for name in ("key", "speaker_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"Utterance.{name} must be a non-empty string, got {value!r}")
        if not isinstance(self.text, str):
            raise ValueError(f"Utterance.text must be a string, got {type(self.text).__name__}")

    @classmethod
    def from_message(
        cls,
        message: ChatMessage,
        *,
        key: str | None = None,
        person_of: Callable[[str], str] | None = None,
        reply_to_id: str | None = None,
        forwarded: bool = False,
    ) -> Utterance:
        """Build from a ChatMessage. `person_of` maps a platform user id to a person id (identity by
        default). When the message has segments, only its text and mention segments are kept, so
        quoted reply previews and forwarded cards never count as the sender's words."""
        to_person = person_of or (lambda uid: uid)
        text = message.text
        if message.segments:
            kept = [s.text for s in message.segments if s.kind in (SegmentKind.TEXT, SegmentKind.MENTION)]
            text = "".join(kept)
        return cls(
            key=key or f"{message.platform}:{message.chat_id}:{message.message_id}",
            speaker_id=to_person(message.sender_id),
            text=text,
            time=message.time,
            mentioned_ids=tuple(to_person(m) for m in message.mentions),
            reply_to_id=reply_to_id,
            forwarded=forwarded or message.forwarded,
        )


def _sentence_end(text: str, start: int) -> int:
    found = _SENTENCE_END.search(text, start)
    return found.start() if found else len(text)


def _mask_quotes(text: str, mask: list[bool]) -> None:
    """Mask quoted passages that are someone else's words: a quote that follows a reporting verb or a
    colon, starts with "name:" (QQ's quote preview), or speaks in the first person."""
    i = 0
    while i < len(text):
        close = _QUOTE_PAIRS.get(text[i])
        if close is None or text[i] in _TITLE_QUOTES:
            i += 1
            continue
        end = text.find(close, i + 1)
        if end < 0:
            break
        inner = text[i + 1 : end]
        before = text[max(0, i - 8) : i].rstrip()
        reported = (
            before.endswith((":", "：", "说", "道", "said", "says", "wrote"))
            or _QQ_QUOTE_HEAD.match(inner) is not None
            or _FIRST_PERSON.search(inner) is not None
        )
        if reported:
            for k in range(i, end + 1):
                mask[k] = True
        i = end + 1


def _mask_reported(text: str, mask: list[bool]) -> None:
    """Mask from a reporting verb to the end of its sentence unless the reporter is the speaker."""
    # Without the HMM: its Viterbi pass is quadratic in a run of unknown characters (a 100 000-character
    # flood took half a minute to record), and report verbs and pronouns are dictionary words anyway.
    tokens = [(tok, start, end) for tok, start, end in jieba.tokenize(text, HMM=False) if tok.strip()]
    for index, (tok, start, _) in enumerate(tokens):
        if tok not in _REPORT_VERBS_ZH:
            continue
        back = index - 1
        while back >= 0:
            if tokens[back][0] in _ADVERBS_ZH:
                back -= 1
            elif back >= 1 and tokens[back - 1][0] in _TO_WHOM_ZH:
                back -= 2  # 我跟你说 / 他对我说: the reporter stands before the addressee
            else:
                break
        subject = tokens[back][0] if back >= 0 else ""
        if subject in _FIRST_PERSON_SUBJECTS_ZH or not subject or not _is_word(subject):
            continue
        _mask_to_sentence_end(text, mask, start)
    for match in _HEARSAY_ZH.finditer(text):
        _mask_to_sentence_end(text, mask, match.start())
    for match in _REPORT_EN.finditer(text):
        subject = (match.group("subj") or "").lower()
        if subject in _FIRST_PERSON_SUBJECTS_EN:
            continue
        _mask_to_sentence_end(text, mask, match.start("verb") if match.group("verb") else match.start())


def _mask_to_sentence_end(text: str, mask: list[bool], start: int) -> None:
    for k in range(start, _sentence_end(text, start)):
        mask[k] = True


def _is_word(token: str) -> bool:
    return any(ch.isalnum() for ch in token)


def own_text(text: str, *, forwarded: bool = False) -> str:
    """`text` with everything that is not the speaker's own words blanked to newlines, so offsets stay
    valid and no pattern can run across a removed part: quote lines ("> …"), quotes of others
    (他说“…”, 「小红：…」, quotes in the first person), reported speech (他说…, 听说…, she said …).
    Typographic apostrophes become ASCII ones ("I’m" reads as "I'm"), one character for one."""
    if forwarded:
        return "\n" * len(text)
    mask = [False] * len(text)
    for line in _QUOTE_LINE.finditer(text):
        for k in range(line.start(), line.end()):
            mask[k] = True
    _mask_quotes(text, mask)
    _mask_reported(text, mask)
    own = "".join("\n" if hidden else ch for ch, hidden in zip(text, mask, strict=True))
    return plain_apostrophes(own)


@dataclass(frozen=True, slots=True)
class Clause:
    """A sentence of the speaker's own words: its text, its offset in the message, and whether it
    is a question (ends in ?/？ or a question particle)."""

    text: str
    start: int
    question: bool


_CLAUSE = re.compile(r"[^。！？!?；;\n]+")
_QUESTION_TAIL = re.compile(r"(?:吗|么|嘛|呢|不|没)\s*$")


def own_clauses(utterance: Utterance) -> list[Clause]:
    """The speaker's own sentences, split on sentence punctuation (CJK and Latin)."""
    text = own_text(utterance.text, forwarded=utterance.forwarded)
    clauses: list[Clause] = []
    for match in _CLAUSE.finditer(text):
        for piece_start, piece in _split_latin_periods(match.group(), match.start()):
            stripped = piece.strip()
            if not stripped:
                continue
            offset = piece_start + (len(piece) - len(piece.lstrip()))
            end = offset + len(stripped)
            terminator = text[end : end + 1] if end < len(text) else ""
            question = terminator in ("?", "？") or _QUESTION_TAIL.search(stripped) is not None
            clauses.append(Clause(stripped, offset, question))
    return clauses


def _split_latin_periods(text: str, base: int) -> list[tuple[int, str]]:
    pieces: list[tuple[int, str]] = []
    start = 0
    for period in re.finditer(r"\.(?=\s|$)", text):
        pieces.append((base + start, text[start : period.start()]))
        start = period.end()
    pieces.append((base + start, text[start:]))
    return pieces


# A Latin colon splits only before a space, so "CS:GO" and "10:30" stay whole.
_SUB_CLAUSE_BREAK = re.compile(r"[，,、：…⋯]|:(?=\s|$)")
# An A-not-A question ("我是不是程序员", "住不住杭州", "有没有养猫") or 是否; 动不动 ("at every turn") is
# no question.
_A_NOT_A = re.compile(r"(?!动不动)([\u4e00-\u9fff])[不没]\1|是否")


def sub_clauses(clause: Clause) -> list[Clause]:
    """A sentence cut at commas and colons ("大家好，我是阿飞，请多关照" → three parts); every part
    inherits the sentence's question flag, and a part asking an A-not-A question ("我是不是程序员",
    which needs no question mark) is a question by itself."""
    parts: list[Clause] = []
    start = 0
    for end in [m.start() for m in _SUB_CLAUSE_BREAK.finditer(clause.text)] + [len(clause.text)]:
        piece = clause.text[start:end]
        stripped = piece.strip()
        if stripped:
            offset = clause.start + start + (len(piece) - len(piece.lstrip()))
            parts.append(Clause(stripped, offset, clause.question or _A_NOT_A.search(stripped) is not None))
        start = end + 1
    return parts
