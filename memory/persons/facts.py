"""Offline facts about people from what they say about themselves, and the merge rule that keeps history.

Only the speaker's own words count (`speech.own_clauses`: quotes, forwards and reported speech are
blanked), and only statements whose subject is the speaker (我… / I …) or, with an `AliasIndex`, a
clearly named third person at the start of the clause ("小红住在北京", "Bob lives in Paris").
Pronoun subjects (他/她/he/she), questions, hypotheticals and jokes yield nothing. A negation yields
no fact; when it takes something back ("我不住杭州了", "我从腾讯离职了", "I no longer work at Google") it
yields a `Retraction`, which retires the matching current fact when merged.
The preference, habit and "I used to" patterns follow seed 000 (MemPalace's preference extraction).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import NamedTuple

from memory.persons.aliases import AliasIndex
from memory.persons.names import has_cjk, pos_tags
from memory.persons.speech import Clause, Utterance, own_clauses, sub_clauses
from memory.text import normalize

SINGLE_VALUED = frozenset({"location", "hometown", "job", "workplace", "school", "age"})
FAVORITE_PREFIX = "favorite:"
OPPOSITES = {"likes": "dislikes", "dislikes": "likes"}
THIRD_PERSON_MIN_CONFIDENCE = 0.9
MAX_VALUE_CHARS = 40
RAW_VALUE_CHARS = 200
"""What `_clean_value` reads of the text after a predicate: a value longer than MAX_VALUE_CHARS is
dropped anyway, and the trailing-noise patterns below take time growing with the square of what they
read (a member's "I love hiking" and 20,000 spaces held the process for minutes)."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One attribute of a person with its evidence: the message it came from, its time and the span
    of the message text. `source` is "self" (the person about themselves) or "stated" (someone naming
    them). `superseded_at`/`superseded_by` are set once a newer fact replaced it; `seen_keys` lists
    later messages that repeated it."""

    person_id: str
    key: str
    value: str
    message_key: str
    time: datetime
    span: tuple[int, int]
    text: str
    source: str = "self"
    confidence: float = 0.8
    superseded_at: datetime | None = None
    superseded_by: str | None = None
    seen_keys: tuple[str, ...] = ()

    @property
    def is_single_valued(self) -> bool:
        return single_valued(self.key)


def single_valued(key: str) -> bool:
    """Whether a person holds one value of `key` at a time (a new one supersedes it)."""
    return key in SINGLE_VALUED or key.startswith(FAVORITE_PREFIX)


@dataclass(frozen=True, slots=True)
class Retraction:
    """A statement that something no longer holds: it retires the person's current facts of one of
    `keys` whose value overlaps `value` (any value when None) and that were learnt before it."""

    person_id: str
    keys: tuple[str, ...]
    value: str | None
    message_key: str
    time: datetime

    def retires(self, fact: Fact) -> bool:
        """Whether `fact` is what this statement takes back (never a fact of the same message)."""
        if fact.key not in self.keys or fact.message_key == self.message_key or fact.time > self.time:
            return False
        if self.value is None:
            return True
        held, said = normalize(fact.value), normalize(self.value)
        return said in held or held in said


Statement = Fact | Retraction


# ---- patterns -------------------------------------------------------------------------------------

# 哈{2,}+ is possessive: a run of 哈 split every way into 哈哈+ took exponential time.
_ZH_LEAD = (
    r"^(?:(?:其实|对了|顺便说一下|说实话|说真的|嗯|啊|哦|噢|唉|哎|诶|哈{2,}+|现在|目前|我跟你们?说)"
    r"\s*)*"
)
_ZH_SELF = r"(?:我|本人|俺)"
# 又 and 开始 say a liking (or a habit) has come back or begun: "我现在又喜欢猫了", "我又开始喜欢跑步了".
_ZH_ADV = r"(?:现在|目前|也|还|又|已经|开始|其实|就|都|本来|自己|倒是|今年(?=\d|[一二三四五六七八九十两]))*"
_JOB_SUFFIX = (
    r"(?:师|员|生|家|工|手|者|医生|护士|司机|警察|记者|会计|老板|主播|博主|律师|程序猿|码农|经理|总监)"
)
_JOB_COUNTER = r"(?:一名|一个|一位|个|名|位)?"
_NOT_JOBS = frozenset("男生 女生 先生 后生 新生 人家 大家 自家 对手 新手 老手".split())
_ZH_NUM = r"\d{1,3}|[一二三四五六七八九十两]{1,3}"

_ZH_PREDICATES: list[tuple[str, re.Pattern[str]]] = [
    (key, re.compile(pattern))
    for key, pattern in [
        ("favorite", r"的?最喜欢的(?P<k>[^是]{1,8}?)是(?P<v>.+)"),
        ("location", r"(?:住在|住|定居在|生活在|搬到了?|搬去了?|人在)(?P<v>.+)"),
        ("hometown", r"(?:的?老家(?:是|在)|来自)(?P<v>.+)"),
        ("hometown", r"是(?P<v>[\u4e00-\u9fff]{2,6})人$"),
        ("workplace", r"在(?P<v>.{1,20}?)(?:工作|上班|实习)(?:了|呢|啦)?$"),
        ("school", r"在(?P<v>.{1,20}?)(?:上学|读书|念书|读大学|上大学|读研|读博|念大学)(?:了|呢|啦)?$"),
        ("school", r"是(?P<v>.{1,20}?(?:大学|学院|中学|高中|小学))的学生$"),
        ("job", r"的?(?:工作|职业)是(?P<v>.+)"),
        ("job", r"(?:是|当)(?:一名|一个|一位|个|名|位)?(?P<v>.{0,8}?" + _JOB_SUFFIX + r")(?:啦|呢|哦)?$"),
        ("job", r"(?:做|干|从事)(?P<v>.{1,12}?)(?:工作|行业|这行|的)$"),
        ("job", r"在.{1,20}?(?:当|做)" + _JOB_COUNTER + r"(?P<v>.{0,8}?" + _JOB_SUFFIX + r")(?:啦|呢|哦)?$"),
        ("job", r"在?(?P<v>读研|读博|读大学)(?:呢|了|啦)?$"),
        ("allergy", r"对(?P<v>.{1,12}?)过敏"),
        ("age", r"(?P<v>" + _ZH_NUM + r")岁(?:了|啦)?$"),
        ("dislikes", r"(?:最|很|特别|超|真的)?(?:不喜欢|不太喜欢|讨厌|受不了|不爱|最怕|害怕)(?P<v>.+)"),
        ("dislikes", r"(?:不吃|不喝|吃不了|喝不了)(?P<v>.+)"),
        (
            "likes",
            r"(?:很|挺|非常|特别|超|超级|最|真的)?(?:喜欢|热爱|爱吃|爱喝|爱玩|爱看|迷上了|爱上了)(?P<v>.+)",
        ),
        ("habit", r"(?:一般|通常|经常|总是|每天|平时|常常|习惯)(?P<v>.+)"),
        ("habit", r"(?P<v>(?:每周|每个?周末|周[一二三四五六日天])[^，,]{0,6}?(?:固定|都|会)[^，,]{1,20})"),
        ("past_habit", r"(?:以前|过去|小时候)(?:经常|常常|总是|常|老是)(?P<v>.+)"),
        ("pets", r"养了?(?:一只|一条|两只|三只|一个|只|条)?(?P<v>.+)"),
    ]
]

_PLACES = ("location", "workplace", "school")
# "我在找暑期实习", "我在申请读研": 在 there says what one is doing (looking, applying), not where.
_SEEKING_ZH = re.compile(r"(?:找|寻找|准备|申请|投|面试|应聘|考虑|争取)")
# Negations that take something back, read after the subject like the predicates above; "v" is optional
# where the statement names nothing ("我离职了": whatever workplace was held).
_ZH_RETRACTIONS: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (keys, re.compile(pattern))
    for keys, pattern in [
        (("location",), r"(?:不|没|没有)再?(?:住在?|定居在|生活在)(?P<v>.+)"),
        (("location",), r"(?:不|没|没有)再?在(?P<v>.{1,20}?)(?:住|生活)(?:了|啦)?$"),
        (("workplace",), r"(?:不|没|没有)再?在(?P<v>.{1,20}?)(?:工作|上班|实习)(?:了|啦)?$"),
        (("workplace",), r"(?:从(?P<v>.{1,20}?))?(?:离职|辞职)(?:了|啦)$"),
        (("school",), r"(?:不|没|没有)再?在(?P<v>.{1,20}?)(?:上学|读书|念书)(?:了|啦)?$"),
        (("school",), r"(?:从(?P<v>.{1,20}?))?毕业(?:了|啦)$"),
        (
            ("job",),
            r"(?:不|没)再?(?:当|做|是|干)" + _JOB_COUNTER + r"(?P<v>.{0,8}?" + _JOB_SUFFIX + r")(?:了|啦)?$",
        ),
        (("job", "workplace"), r"退休(?:了|啦)$"),
        (("hometown",), r"不是(?P<v>[\u4e00-\u9fff]{2,6})人$"),
        (("pets",), r"(?:不|没|没有)再?养(?P<v>.+?)(?:了|啦)$"),
        (_PLACES, r"(?:离开|搬离|搬出)了?(?P<v>.{1,20}?)(?:了|啦)?$"),
    ]
]

_EN_LEAD = r"^(?i:(?:so|well|actually|now|also|and|but|honestly|btw|oh|yeah|haha|lol|also|ok|okay)[\s,]+)*"
_EN_JOBS = (
    r"(?:engineer|developer|programmer|teacher|student|doctor|nurse|designer|lawyer|manager|writer|artist|"
    r"scientist|researcher|chef|cook|driver|accountant|consultant|analyst|musician|photographer|professor|"
    r"officer|firefighter|pilot|counselor|therapist|mechanic|farmer|journalist|editor|architect|dentist|"
    r"pharmacist|intern|freelancer|streamer|painter|singer|dancer|actor|actress|librarian|cashier|"
    r"technician|veterinarian|vet|salesperson|entrepreneur|founder|barista)s?"
)
_EN_NATIONALITIES = (
    r"(?:American|Argentinian|Australian|Austrian|Belgian|Brazilian|British|Canadian|Chilean|Chinese|"
    r"Colombian|Czech|Danish|Dutch|Egyptian|English|Filipino|Finnish|French|German|Greek|Hungarian|"
    r"Indian|Indonesian|Irish|Israeli|Italian|Japanese|Korean|Malaysian|Mexican|Nigerian|Norwegian|"
    r"Pakistani|Peruvian|Polish|Portuguese|Russian|Scottish|Singaporean|Spanish|Swedish|Swiss|Taiwanese|"
    r"Thai|Turkish|Ukrainian|Vietnamese|Welsh)"
)

_EN_PREDICATES: list[tuple[str, str]] = [
    ("location", r"(?:currently\s+|now\s+|still\s+)?(?:live|reside)\s+in\s+(?P<v>.+)"),
    ("location", r"(?:'m|\s+am)\s+(?:currently\s+|now\s+)?(?:living|based|staying)\s+in\s+(?P<v>.+)"),
    ("location", r"(?:just\s+|recently\s+)?moved\s+to\s+(?P<v>.+)"),
    ("hometown", r"(?:'m|\s+am)\s+(?:originally\s+)?from\s+(?P<v>.+)"),
    ("allergy", r"(?:'m|\s+am)\s+(?:very\s+|severely\s+)?allergic\s+to\s+(?P<v>.+)"),
    ("hometown", r"(?:come\s+from|grew\s+up\s+in)\s+(?P<v>.+)"),
    ("workplace", r"work\s+(?:at|for)\s+(?P<v>.+)"),
    ("job", r"work\s+as\s+(?:an?\s+)?(?P<v>.+)"),
    ("job", r"(?:'m|\s+am)\s+an?\s+(?P<v>(?:[\w-]+\s+){0,2}" + _EN_JOBS + r")\b"),
    ("nationality", r"(?:'m|\s+am)\s+(?:a\s+)?(?P<v>" + _EN_NATIONALITIES + r")(?!\s+[a-z])\b"),
    ("school", r"(?:study|studied)\s+at\s+(?P<v>.+)"),
    ("school", r"go\s+to\s+(?P<v>.+?(?:university|college|school|academy))\b"),
    ("school", r"(?:'m|\s+am)\s+a\s+student\s+at\s+(?P<v>.+)"),
    ("age", r"(?:'m|\s+am)\s+(?P<v>\d{1,3})(?:\s+years?\s+old)?$"),
    ("age", r"just\s+turned\s+(?P<v>\d{1,3})\b"),
    ("dislikes", r"(?:really\s+)?(?:don't|do\s+not|dont)\s+(?:really\s+)?like\s+(?P<v>.+)"),
    ("dislikes", r"(?:really\s+)?(?:dislike|hate|can't\s+stand|cannot\s+stand|avoid|detest)\s+(?P<v>.+)"),
    ("dislikes", r"(?:'m|\s+am)\s+not\s+(?:a\s+fan\s+of|into|fond\s+of)\s+(?P<v>.+)"),
    ("likes", r"(?:really\s+|also\s+|absolutely\s+)?(?:like|love|enjoy|prefer|adore)\s+(?P<v>.+)"),
    (
        "likes",
        r"(?:'m|\s+am)\s+(?:a\s+(?:big\s+|huge\s+)?fan\s+of|into|passionate\s+about|obsessed\s+with)\s+(?P<v>.+)",
    ),
    ("habit", r"(?:usually|always|typically|generally|often|normally|tend\s+to)\s+(?P<v>.+)"),
    ("habit", r"(?:'m|\s+am)\s+(?:used|accustomed)\s+to\s+(?P<v>.+)"),
    ("past_habit", r"used\s+to\s+(?P<v>.+)"),
    (
        "pets",
        r"have\s+(?:an?|two|three|\d+)\s+(?P<v>(?:\w+\s+)?(?:cats?|dogs?|rabbits?|hamsters?|parrots?|"
        r"birds?|fish|turtles?|puppy|puppies|kittens?))\b",
    ),
]
_EN_NOT = r"(?:don't|dont|do\s+not|no\s+longer|don't\s+really)\s+"
_EN_RETRACTIONS: list[tuple[tuple[str, ...], str]] = [
    (("location",), _EN_NOT + r"(?:live|reside)\s+in\s+(?P<v>.+)"),
    (("location",), r"(?:'m|\s+am)\s+(?:not|no\s+longer)\s+(?:living|based|staying)\s+in\s+(?P<v>.+)"),
    (("workplace",), _EN_NOT + r"work\s+(?:at|for)\s+(?P<v>.+)"),
    (("workplace",), r"(?:quit|left)\s+my\s+job(?:\s+at\s+(?P<v>.+))?$"),
    (("job",), r"(?:'m|\s+am)\s+(?:not|no\s+longer)\s+an?\s+(?P<v>(?:[\w-]+\s+){0,2}" + _EN_JOBS + r")\b"),
    (("job", "workplace"), r"(?:'ve|\s+have)?\s*retired$"),
    (("school",), r"graduated(?:\s+from\s+(?P<v>.+))?$"),
    (_PLACES, r"(?:left|moved\s+(?:out\s+of|away\s+from))\s+(?P<v>.+)"),
]


def _en_self(pattern: str) -> re.Pattern[str]:
    """`pattern` read after "I" at the start of a clause ("'m …" patterns follow it directly)."""
    joint = "" if pattern.startswith(("(?:'m", "(?:'ve")) else r"\s+"
    return re.compile(_EN_LEAD + r"I(?=\s|')" + joint + pattern, re.I)


_EN_SELF: list[tuple[str, re.Pattern[str]]] = [(key, _en_self(p)) for key, p in _EN_PREDICATES]
_EN_SELF_RETRACTIONS = [(keys, _en_self(p)) for keys, p in _EN_RETRACTIONS]
_EN_FAVORITE = re.compile(r"\bmy\s+fav(?:ou?rite)?\s+(?P<k>[a-z][a-z ]{0,20}?)\s+is\s+(?P<v>.+)", re.I)
# A named third person: the same meanings with English third-person verb forms.
_EN_THIRD: list[tuple[str, re.Pattern[str]]] = [
    (key, re.compile(r"^\s*" + p, re.I))
    for key, p in [
        ("location", r"(?:lives|resides)\s+in\s+(?P<v>.+)"),
        ("hometown", r"is\s+(?:originally\s+)?from\s+(?P<v>.+)"),
        ("workplace", r"works\s+(?:at|for)\s+(?P<v>.+)"),
        ("job", r"works\s+as\s+(?:an?\s+)?(?P<v>.+)"),
        ("job", r"is\s+an?\s+(?P<v>(?:[\w-]+\s+){0,2}" + _EN_JOBS + r")\b"),
        ("age", r"is\s+(?P<v>\d{1,3})(?:\s+years?\s+old)?$"),
        ("likes", r"(?:likes|loves|enjoys|prefers)\s+(?P<v>.+)"),
        ("dislikes", r"(?:hates|dislikes|doesn't\s+like|does\s+not\s+like)\s+(?P<v>.+)"),
        ("allergy", r"is\s+allergic\s+to\s+(?P<v>.+)"),
    ]
]

_REFUSED_VALUES = frozenset(
    "你 你们 他 她 它 他们 她们 谁 什么 哪 哪里 哪儿 几 多少 这个 那个 这 那 you him her it them this that "
    "what where who which me us".split()
)
_INTERROGATIVE = re.compile(r"什么|哪|谁|几[个岁点]|多少|吗|(?i:\b(?:what|where|who|which)\b)")
_TRAILING_ZH = re.compile(r"[了呢啊呀哦吧的哈嘿嘻呵嘛啦~～\s]+$")
# English chat fillers after a statement: "I'm from Lyon actually", "I live in Berlin btw".
_TRAILING_EN = re.compile(
    r"(?i:(?<!\s)\s+(?:too|as\s+well|a\s+lot|so\s+much|very\s+much|lol|lmf?ao|rofl|(?:ha){2,}|hehe|xd|btw|tbh|"
    r"ngl|fr|imo|imho|tho|actually|right\s+now|now|these\s+days|anyway|any\s*more|originally|"
    r"at\s+the\s+moment))+$"
)
# What trails a statement without being part of the value: emoji, emoticons (":)", "^^"), QQ face
# codes ("[doge]"), laughter ("hhh", "233"), and how long it has been so ("三年", "好几个月").
_TRAILING_NOISE = re.compile(
    r"(?:[\s\u200d\ufe0e\ufe0f\u20e3\U0001f3fb-\U0001f3ff]|[:;=]-?[()DPp3/]|\^_?\^"
    r"|[\u2190-\u2bff\U0001f000-\U0001faff]|\[[^\[\]\s]{1,8}\]|(?i:h{3,}+|(?<!\d)2333*|xswl)"
    r"|(?:\d+|[一二三四五六七八九十两几好多半]+)个?多?(?:年|月|天|周|星期|礼拜)多?(?:了|啦)?)+$"
)
# "I love that you chose pottery", "我喜欢你的头像": reactions to someone else, not a trait.
_REACTION = re.compile(
    r"(?:你|他|她|它|这|那)|(?i:(?:it|that|this|those|these|their|your|his|her|them|they|how|what|you|"
    r"the\s+way)\b)"
)
_CUT_AT = re.compile(
    r"但是|但|因为|所以|不过|\s[-–—]+\s|(?i:(?<!\s)\s+(?:but|because|although|though|so|and\s+then|as\s+an?|"
    r"before(?=\s+(?:i|we|you|he|she|they|it|that|then|\w+ing)\b)|"
    r"for\s+(?:\w+\s+)?(?:years?|months?|weeks?)|since|(?:back\s+)?in\s+(?:\d{4}|['’]\d{2})|"
    r"(?:last|this|next)\s+(?:year|month|week)|\w+\s+(?:years?|months?|weeks?|days?)\s+ago)(?:\s+|$))"
)
# Who one does a thing with is part of the thing ("go hiking with my dog"), not of a place or an
# employer ("I live in Paris with my wife").
_CUT_AT_COMPANY = re.compile(r"(?i:\s+with\s+(?:my|our)(?:\s+|$))")
# Keys naming something one does, whose qualifiers ("with my dog", "on weekends", "after work") say
# what they do; dropping trailing ones leaves it true, only less precise.
_ACTIVITIES = frozenset({"likes", "dislikes", "habit", "past_habit"})
# Where an English qualifier starts: an activity too long is cut before the last ones that do not fit,
# and one left without its object ("I usually walk with my") goes.
_PREPOSITIONS = r"(?:with|on|at|in|before|after|near|during|every|around|from|by|without)"
_QUALIFIER = re.compile(r"(?i:\s+(?=" + _PREPOSITIONS + r"\s))")
_DANGLING = re.compile(r"(?i:\s+" + _PREPOSITIONS + r"\s+(?:my|our|the|an?))$")  # "sleep in" stays


# A one-character verb that takes an object: ending a value, its object was left out, said before
# ("@洋洋 你周五打羽毛球吗" - "我一般周五晚上都打"), and the value alone ("周五晚上都打") misleads.
_OBJECT_VERBS_ZH = frozenset("打 玩 吃 喝 看 买 做 带 用 听 学 练 写 拿 弹 读 追 刷 踢".split())


def _lacks_its_object(value: str) -> bool:
    """Whether a Chinese value ends in a verb whose object was left out ("周五晚上都打")."""
    if not has_cjk(value):
        return False
    words = [word for word, _ in pos_tags(value) if word.strip()]
    return bool(words) and words[-1] in _OBJECT_VERBS_ZH


def _clean_value(raw: str, key: str | None = None) -> str | None:
    """The value of `key` said in `raw`, without what trails it; None when nothing fit to keep is."""
    value = _CUT_AT.split(raw[:RAW_VALUE_CHARS], maxsplit=1)[0]
    if key not in _ACTIVITIES:
        value = _CUT_AT_COMPANY.split(value, maxsplit=1)[0]
    value = _trimmed(value)
    if key in _ACTIVITIES:
        value = _trimmed(_DANGLING.sub("", _without_trailing_qualifiers(value)))
    if not value or len(value) > MAX_VALUE_CHARS or normalize(value) in _REFUSED_VALUES:
        return None
    if _REACTION.match(value) or _lacks_its_object(value):
        return None
    if _INTERROGATIVE.search(value) or (value.isascii() and value.isalpha() and len(value) < 3):
        return None
    return value


def _trimmed(value: str) -> str:
    while True:
        trimmed = _TRAILING_NOISE.sub("", value)
        trimmed = _TRAILING_EN.sub("", _TRAILING_ZH.sub("", trimmed)).strip(" ,.;:!~\"'“”「」")
        if trimmed == value:
            return value
        value = trimmed


def _without_trailing_qualifiers(value: str) -> str:
    """An English activity too long for `MAX_VALUE_CHARS` cut at a word boundary before the first of
    its trailing qualifiers that no longer fits ("go hiking with my dog on weekends in the mountains
    near Boulder" → "go hiking with my dog on weekends"); unchanged when no such cut fits."""
    if len(value) <= MAX_VALUE_CHARS:
        return value
    cuts = [m.start() for m in _QUALIFIER.finditer(value) if 0 < m.start() <= MAX_VALUE_CHARS]
    return value[: cuts[-1]] if cuts else value


def _fact_from(
    match: re.Match[str], key: str, offset: int, utterance: Utterance, person_id: str, source: str
) -> Fact | None:
    raw = match.group("v")
    value = _clean_value(raw, key)
    if value is None:
        return None
    if key == "favorite":
        key = FAVORITE_PREFIX + normalize(match.group("k")).strip()
    if key == "job" and value in _NOT_JOBS:
        return None
    if key in _PLACES and _SEEKING_ZH.match(value):
        return None
    if key == "hometown" and match.re.pattern.endswith("人$") and not _is_place(value):
        return None
    start = offset + match.start("v") + raw.find(value)  # past what was stripped in front
    span = (start, start + len(value))
    confidence = 0.8 if source == "self" else 0.6
    return Fact(
        person_id,
        key,
        value,
        utterance.key,
        utterance.time,
        span,
        utterance.text[span[0] : span[1]],
        source,
        confidence,
    )


def _retraction_from(
    match: re.Match[str], keys: tuple[str, ...], utterance: Utterance, person_id: str
) -> Retraction | None:
    raw = match.groupdict().get("v")
    value = _clean_value(raw) if raw else None
    if raw and value is None:
        return None
    return Retraction(person_id, keys, value, utterance.key, utterance.time)


def _zh_retraction(text: str, utterance: Utterance, person_id: str) -> Retraction | None:
    for keys, pattern in _ZH_RETRACTIONS:
        found = pattern.match(text)
        if found:
            return _retraction_from(found, keys, utterance, person_id)
    return None


def _is_place(word: str) -> bool:
    return any(flag.startswith("ns") for _, flag in pos_tags(word))


def _zh_predicate(text: str) -> tuple[str, re.Match[str]] | None:
    for key, pattern in _ZH_PREDICATES:
        found = pattern.match(text)
        if found:
            return key, found
    return None


_ZH_SUBJECT = re.compile(_ZH_LEAD + _ZH_SELF + r"(?P<adv>" + _ZH_ADV + r")")
_ZH_CARRY = re.compile(_ZH_LEAD + r"(?:也|还|而且|并且|同时|但是|但|可是|不过)?" + _ZH_ADV)


def _self_facts(clause: Clause, utterance: Utterance, carried: bool) -> tuple[list[Statement], bool]:
    """Statements of one clause with the speaker as subject; the bool says whether the subject carries
    to the next comma-clause ("我住在北京，在腾讯工作")."""
    text = clause.text
    speaker = utterance.speaker_id
    subject = _ZH_SUBJECT.match(text)
    if subject is None and carried:
        subject = _ZH_CARRY.match(text)
    if subject is not None:
        rest = text[subject.end() :]
        got = _zh_predicate(rest)
        if got:
            key, found = got
            fact = _fact_from(found, key, clause.start + subject.end(), utterance, speaker, "self")
            return ([fact] if fact else []), True
        retraction = _zh_retraction(rest, utterance, speaker)
        if retraction is not None:
            return [retraction], True
        if _ZH_SUBJECT.match(text):
            return [], True
    found_: list[Statement] = []
    for key, pattern in _EN_SELF:
        matched = pattern.search(text)
        if matched:
            fact = _fact_from(matched, key, clause.start, utterance, speaker, "self")
            if fact:
                found_.append(fact)
                break
    favorite = _EN_FAVORITE.search(text)
    if favorite:
        fact = _fact_from(favorite, "favorite", clause.start, utterance, speaker, "self")
        if fact:
            found_.append(fact)
    if not found_:
        for keys, pattern in _EN_SELF_RETRACTIONS:
            matched = pattern.search(text)
            if matched:
                retraction = _retraction_from(matched, keys, utterance, speaker)
                if retraction is not None:
                    found_.append(retraction)
                    break
    return found_, bool(found_)


def _third_person_facts(clause: Clause, utterance: Utterance, aliases: AliasIndex) -> list[Statement]:
    """Statements about a clearly named person (not the speaker) who opens the clause: "小红住在北京",
    "Bob works at Google", "小红不在腾讯上班了"."""
    mentions = aliases.find_mentions(clause.text, min_confidence=THIRD_PERSON_MIN_CONFIDENCE)
    if not mentions:
        return []
    first = mentions[0]
    if first.person_id is None or first.person_id == utterance.speaker_id:
        return []
    if clause.text[: first.span[0]].strip():  # "@小红 …" addresses her; it says nothing about her
        return []
    rest = clause.text[first.span[1] :]
    offset = clause.start + first.span[1]
    adverbs = re.match(_ZH_ADV, rest)
    skip = adverbs.end() if adverbs else 0
    got = _zh_predicate(rest[skip:])
    if got:
        fact = _fact_from(got[1], got[0], offset + skip, utterance, first.person_id, "stated")
        return [fact] if fact else []
    retraction = _zh_retraction(rest[skip:], utterance, first.person_id)
    if retraction is not None:
        return [retraction]
    for key, pattern in _EN_THIRD:
        found = pattern.match(rest)
        if found:
            fact = _fact_from(found, key, offset, utterance, first.person_id, "stated")
            return [fact] if fact else []
    return []


# "…开玩笑的", "骗你的", "just kidding": the message takes back what it says (not "我不是开玩笑的").
_JOKING = re.compile(
    r"(?<!不是)(?<!没)(?<!没有)(?:开玩笑(?:的|啦|呢|哈|而已)|开个玩笑)|逗你们?玩|骗你们?的|说着玩的?"
    r"|(?i:\bj/?k\b|just\s+(?:kidding|joking))"
)


def extract_facts(utterance: Utterance, aliases: AliasIndex | None = None) -> list[Fact]:
    """Facts stated in one message: the speaker about themselves, and, when `aliases` is given, about
    a clearly named other person of the chat. Each fact keeps the message key, time and span. A
    message that says it is joking ("…开玩笑的", "just kidding") states nothing."""
    return [s for s in extract_statements(utterance, aliases) if isinstance(s, Fact)]


def extract_statements(utterance: Utterance, aliases: AliasIndex | None = None) -> list[Statement]:
    """What `extract_facts` finds, and the retractions of the same message ("我不住杭州了")."""
    facts: list[Statement] = []
    sentences = own_clauses(utterance)
    if any(_JOKING.search(sentence.text) for sentence in sentences):
        return []
    for sentence in sentences:
        if sentence.question:
            continue
        carried = False
        for clause in sub_clauses(sentence):
            if clause.question:
                carried = False
                continue
            found, carried = _self_facts(clause, utterance, carried)
            if not found and aliases is not None:
                found = _third_person_facts(clause, utterance, aliases)
            facts.extend(found)
    return facts


# ---- merging --------------------------------------------------------------------------------------


class MergeResult(NamedTuple):
    """`current`: the facts that hold now; `superseded`: replaced ones, for the timeline."""

    current: list[Fact]
    superseded: list[Fact]


def same_value(a: str, b: str) -> bool:
    """Whether two values of a fact say the same (case, width and spacing aside)."""
    return normalize(a) == normalize(b)


def _same_value(a: Fact, b: Fact) -> bool:
    return same_value(a.value, b.value)


def merge_facts(existing: Iterable[Fact], new: Iterable[Statement]) -> MergeResult:
    """Merge `new` facts into a person's `existing` current facts, in time order, in O(n) per key.

    - the same value again: the existing fact stays and records the message in `seen_keys`;
    - a single-valued key read twice from one message (offline "杭州滨江", the model "杭州"): the
      first reading stays, the other is dropped — one statement is never a change;
    - a single-valued key (location, job, age, favorite:…) with a new value: the old fact is
      superseded (kept, with `superseded_at`/`superseded_by`); a new fact older than the current one
      goes straight to the history instead;
    - multi-valued keys (likes, habits, pets) accumulate, except that liking something supersedes
      disliking it and the reverse;
    - a retraction supersedes the earlier current facts it takes back, and is not kept itself.
    Facts in `existing` that are already superseded pass through to `superseded` unchanged.
    """
    buckets: dict[tuple[str, str], list[Fact]] = {}
    superseded: list[Fact] = []
    for old in existing:
        if old.superseded_at is not None:
            superseded.append(old)
        else:
            buckets.setdefault((old.person_id, old.key), []).append(old)
    for fact in sorted(new, key=lambda f: f.time):
        if isinstance(fact, Retraction):
            for key in fact.keys:
                taken_back = buckets.get((fact.person_id, key), [])
                for gone in [h for h in taken_back if fact.retires(h)]:
                    taken_back.remove(gone)
                    superseded.append(replace(gone, superseded_at=fact.time, superseded_by=fact.message_key))
            continue
        bucket = buckets.setdefault((fact.person_id, fact.key), [])
        same = next((i for i, held in enumerate(bucket) if _same_value(held, fact)), None)
        if same is not None:
            held = bucket[same]
            if fact.message_key != held.message_key and fact.message_key not in held.seen_keys:
                bucket[same] = replace(held, seen_keys=(*held.seen_keys, fact.message_key))
            continue
        opposite = OPPOSITES.get(fact.key)
        if opposite:
            other = buckets.get((fact.person_id, opposite), [])
            for held in [h for h in other if _same_value(h, fact)]:
                other.remove(held)
                superseded.append(_retire(held, fact))
        if fact.is_single_valued and any(held.message_key == fact.message_key for held in bucket):
            continue  # another reading of the same statement (offline and model), not a change
        if fact.is_single_valued and bucket:
            newest = max(bucket, key=lambda f: f.time)
            if newest.time > fact.time:
                superseded.append(_retire(fact, newest))
                continue
            superseded.extend(_retire(held, fact) for held in bucket)
            bucket.clear()
        bucket.append(fact)
    current = [fact for bucket in buckets.values() for fact in bucket]
    return MergeResult(current, superseded)


def _retire(old: Fact, by: Fact) -> Fact:
    return replace(old, superseded_at=by.time, superseded_by=by.message_key)


def attributes_of(current: Iterable[Fact]) -> dict[str, str | list[str]]:
    """The JSON profile of a person's current facts: single-valued keys as a string (the newest),
    multi-valued keys as a list in the order they were learnt."""
    profile: dict[str, str | list[str]] = {}
    for fact in sorted(current, key=lambda f: f.time):
        if fact.is_single_valued:
            profile[fact.key] = fact.value
        else:
            values = profile.setdefault(fact.key, [])
            if isinstance(values, list) and fact.value not in values:
                values.append(fact.value)
    return profile
