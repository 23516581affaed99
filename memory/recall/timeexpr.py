"""Relative time expressions in Chinese and English ("3 days ago", "last week", "昨天", "上周三",
"两个月前") and dates ("4月4日", "8 May, 2023", "2023-04-04", "on 4/4", "4/4那天") turned into time
windows, relative to the question's time.

A `TimeHint` is a window [start, end) plus a tolerance: a memory inside the window matches fully, one
within `tolerance` of it partly (linearly less), anything further not at all. Weeks start on Monday.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memory.text import half_width

DAY = timedelta(days=1)
LOCAL_ZONE = "local"
# How a numeric date whose two parts could both be a month ("4/5") is read: April 5 (as in Chinese and
# US English) or 4 May (as in most of Europe).
NumericDateOrder = Literal["month_first", "day_first"]
OUTSIDE_SHARE = 0.5

_CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "俩": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "几": 3,
}
_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "couple of": 2,
    "a couple": 2,
    "a few": 3,
    "few": 3,
    "several": 4,
}
_CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}
_EN_WEEKDAYS = {
    name: i
    for i, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}


@dataclass(frozen=True, slots=True)
class TimeHint:
    """A time window a question points at, with a tolerance for fuzzy memory."""

    start: datetime
    end: datetime
    tolerance: timedelta
    span: tuple[int, int]
    text: str

    def proximity(self, when: datetime) -> float:
        """1.0 inside the window; outside it at most half that, falling linearly to 0 at `tolerance`
        (fuzzy memory may be a little off, but what the question names comes first)."""
        if self.start <= when < self.end:
            return 1.0
        gap = self.start - when if when < self.start else when - self.end
        tolerance = self.tolerance.total_seconds()
        if tolerance <= 0:
            return 0.0
        return OUTSIDE_SHARE * max(0.0, 1.0 - gap.total_seconds() / tolerance)


def parse_cn_number(text: str) -> int | None:
    """Digits or a Chinese numeral below 100 (十, 十二, 二十, 两, 几) as an int."""
    if text.isdigit():
        return int(text)
    if not text or any(ch not in _CN_DIGITS and ch != "十" for ch in text):
        return None
    if "十" not in text:
        return _CN_DIGITS[text] if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    value = (_CN_DIGITS.get(tens, 0) if tens else 1) * 10
    return value + (_CN_DIGITS.get(ones, 0) if ones else 0)


def _en_number(text: str) -> int | None:
    text = text.strip().lower()
    return int(text) if text.isdigit() else _EN_NUMBERS.get(text)


def _day_start(when: datetime) -> datetime:
    return when.replace(hour=0, minute=0, second=0, microsecond=0)


def _days_window(
    now: datetime, days_back: int, tolerance_days: float
) -> tuple[datetime, datetime, timedelta]:
    start = _day_start(now) - days_back * DAY
    return start, start + DAY, timedelta(days=tolerance_days)


def _week_start(now: datetime, weeks_back: int) -> datetime:
    return _day_start(now) - (now.weekday() + 7 * weeks_back) * DAY


def _weekday(now: datetime, weekday: int, weeks_back: int | None) -> tuple[datetime, datetime, timedelta]:
    """A weekday of a week `weeks_back` ago; with None, its most recent past (or today's) occurrence."""
    if weeks_back is None:
        back = (now.weekday() - weekday) % 7
        start = _day_start(now) - back * DAY
    else:
        start = _week_start(now, weeks_back) + weekday * DAY
    return start, start + DAY, timedelta(days=1)


def _weekend(now: datetime, weeks_back: int) -> tuple[datetime, datetime, timedelta]:
    start = _week_start(now, weeks_back) + 5 * DAY
    return start, start + 2 * DAY, timedelta(days=1)


def _month_start(now: datetime, months_back: int) -> datetime:
    index = now.year * 12 + now.month - 1 - months_back
    return _day_start(now).replace(year=index // 12, month=index % 12 + 1, day=1)


def _month(now: datetime, months_back: int) -> tuple[datetime, datetime, timedelta]:
    return _month_start(now, months_back), _month_start(now, months_back - 1), timedelta(days=7)


def _months_ago(now: datetime, months: int) -> tuple[datetime, datetime, timedelta]:
    center = _day_start(now) - timedelta(days=round(30.4 * months))
    half = timedelta(days=7 if months <= 2 else 15)
    return center - half, center + half + DAY, half


def _year(now: datetime, years_back: int) -> tuple[datetime, datetime, timedelta]:
    start = _day_start(now).replace(year=now.year - years_back, month=1, day=1)
    return start, start.replace(year=start.year + 1), timedelta(days=30)


def _weeks_ago(now: datetime, weeks: int) -> tuple[datetime, datetime, timedelta]:
    start = _day_start(now) - 7 * weeks * DAY
    return start - 2 * DAY, start + 3 * DAY, timedelta(days=3)


def _recent(now: datetime, days: int) -> tuple[datetime, datetime, timedelta]:
    return now - days * DAY, now + DAY, timedelta(days=days / 2)


def _n_days_ago(now: datetime, days: int) -> tuple[datetime, datetime, timedelta]:
    return _days_window(now, days, max(1.0, days / 5))


Window = tuple[datetime, datetime, timedelta]
Rule = tuple[re.Pattern[str], Callable[[re.Match[str], datetime], Window | None]]

_CN_COUNT_CHARS = "零〇一二两俩三四五六七八九十几"
# A count starts where no digit stands before it: tried from inside a run too, each start read the
# run to its end (a member's 20,000 digits or 二 took about 10 s in every recall of that message).
_CN_NUM = rf"(?<![\d{_CN_COUNT_CHARS}])(\d++|[{_CN_COUNT_CHARS}]++)"
_EN_NUM = (
    r"(\d+|a couple of|couple of|a couple|a few|few|several|an?|one|two|three|four|five|six|seven|eight"
    r"|nine|ten|eleven|twelve)"
)
_WEEK_CN = r"(?:周|星期|礼拜)"


def _cn_count(m: re.Match[str]) -> int | None:
    return parse_cn_number(m.group(1))


def _with_count(make: Callable[[datetime, int], Window], count: Callable[[re.Match[str]], int | None]):
    def rule(m: re.Match[str], now: datetime) -> Window | None:
        n = count(m)
        return make(now, n) if n is not None and n > 0 else None

    return rule


def _en_count(m: re.Match[str]) -> int | None:
    return _en_number(m.group(1))


_EN_MONTHS = {
    name: i + 1
    for i, name in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        )
    )
}
_EN_MONTHS.update({name[:3]: n for name, n in list(_EN_MONTHS.items())} | {"sept": 9})
# A year by its last two digits after an apostrophe ("'19", "’19"), no part of a quote ("'19'").
_SHORT_YEAR = r"(?<![\w'’])['’]\d{2}(?![\w'’])"
_MONTH_NAME = (
    r"(January|February|March|April|May(?! (?:I|we|you|he|she|they|it)\b)|June|July|August|September|"
    r"October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
)


def _absolute_month(now: datetime, month: int, year: int | None) -> Window | None:
    """A named month: of the given year, else its latest occurrence not after `now`."""
    if not 1 <= month <= 12:
        return None
    if year is None:
        year = now.year if month <= now.month else now.year - 1
    start = _day_start(now).replace(year=year, month=month, day=1)
    end = start.replace(year=year + month // 12, month=month % 12 + 1)
    return start, end, timedelta(days=7)


# Leap years are at most 8 apart (1896 → 1904): how far back a 29 February without a year is looked for.
_LEAP_GAP_YEARS = 8


def _absolute_day(
    now: datetime, month: int, day: int, year: int | None, latest: bool = True
) -> Window | None:
    """A named day of a month: of the given year, else the latest such day not after `now` (with
    `latest`, of the latest year that has it: a 29 February named without a year is the latest one)."""
    month_window = _absolute_month(now, month, year)
    if month_window is None:
        return None
    month_start = month_window[0]
    for back in range(_LEAP_GAP_YEARS + 2 if year is None and latest else 1):
        try:
            start = month_start.replace(year=month_start.year - back, day=day)
        except ValueError:
            continue
        if year is None and start > now:  # later this month: the day meant is a year ago
            continue
        return start, start + DAY, timedelta(days=2)
    return None


def _absolute_year(now: datetime, year: int) -> Window | None:
    if not 1900 <= year <= 2200:
        return None
    start = _day_start(now).replace(year=year, month=1, day=1)
    return start, start.replace(year=year + 1), timedelta(days=30)


def _cn_year(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    digits = [_CN_DIGITS.get(ch) for ch in text]
    return int("".join(str(d) for d in digits)) if all(d is not None for d in digits) else None


def _opt_int(value: str | None) -> int | None:
    return int(value) if value else None


def _full_year(value: str | None, now: datetime) -> int | None:
    """A year written in full ("2023") or by its last two digits ("23", "'19", "’19"): the latest
    year with those digits not after `now`'s ("'19" → 2019, "'95" → 1995)."""
    if not value:
        return None
    digits = value.lstrip("'’")
    if len(digits) != 2:
        return int(digits)
    return now.year - (now.year - int(digits)) % 100


# Words that end in the first character of a time word and are no time: 马上/早上/加上 + 周末 is
# "soon/morning/plus the weekend", 以前/之前 + 天天/天气/年轻 is "before/used to", 如今 + 天气 "nowadays".
_NOT_SHANG = r"(?<![马早晚加算赶碰遇路网线楼身手桌床])"


def _back(word: str) -> int:
    """How many weeks or months back "上…" counts: one per 上 (上上上周 is three weeks), none for 这/本."""
    return len(word) if word.startswith("上") else 0


_NOT_QIAN = r"(?<![以之提目眼面当空先向往事生])"
_NOT_JIN = r"(?<![如])"
_CN_MONTH_DAY = r"(\d{1,2}|[一二三四五六七八九十]{1,3})月(?:份)?(?:(\d{1,2})[日号])?"
_YEARS_BACK = {"今年": 0, "去年": 1, "前年": 2}


def _month_day(
    now: datetime, month: str, day: str | None, year: int | None, latest: bool = True
) -> Window | None:
    """A Chinese "M月" or "M月D日" of `year` (None: the latest such month not after `now`, and with
    `latest` the latest year that has the day)."""
    number = parse_cn_number(month) or 0
    if day:
        return _absolute_day(now, number, int(day), year, latest)
    return _absolute_month(now, number, year)


# A numeric date is no part of a longer run of numbers, words or path parts (a version "1.4/4/2023",
# an address "10.4.4.2023", a URL path "/api/4/4", a phone number "010-4-4-2023").
_NUMERIC_START = r"(?<![0-9A-Za-z/.:_-])"
_NUMERIC_END = r"(?![0-9A-Za-z/_]|[.:-][0-9A-Za-z])"
# A slash date without a year is read only where the question makes it a date: after an English
# preposition of time ("on 4/4", "since 3/15"), or before 号/日/那天 ("4/4那天", "4.4号"); a bare "3/5"
# is as likely a score, a rating or a fraction. 号 of a line, a building or a seat, and 日 of 日元 or
# 日本, are no day.
_EN_DATE_WORD = "|".join(rf"(?<=\b{word} )" for word in ("on", "since", "before", "after", "until", "till"))
_CN_DATE_WORD = r"(?:号(?![线楼房码机位院床车门球])|日(?![元本语文式])|(?=那天|当天|那日))"


def _numeric_day(
    now: datetime, first: str, second: str, year: str | None, order: NumericDateOrder
) -> Window | None:
    """A day written as two numbers and maybe a year ("4/4", "25/12/2025", "4/4/23"): a part above 12
    can only be the day; two that could both be the month are read in `order`."""
    a, b = int(first), int(second)
    day_first = a > 12 or (b <= 12 and order == "day_first")
    month, day = (b, a) if day_first else (a, b)
    return _absolute_day(now, month, day, _full_year(year, now))


def _numeric_rules(order: NumericDateOrder) -> list[Rule]:
    """The rules for numeric dates whose month and day may come either way round."""
    return [
        (
            re.compile(_NUMERIC_START + r"(\d{1,2})([-/.])(\d{1,2})\2((?:19|20)\d{2})" + _NUMERIC_END),
            lambda m, now: _numeric_day(now, m.group(1), m.group(3), m.group(4), order),
        ),
        # A year of two digits: with slashes ("4/4/23", the common short form), else after a word
        # that makes it a date ("on 4.4.23"; a bare "3.12.10" is as likely a version).
        (
            re.compile(_NUMERIC_START + r"(\d{1,2})/(\d{1,2})/(\d{2})" + _NUMERIC_END),
            lambda m, now: _numeric_day(now, m.group(1), m.group(2), m.group(3), order),
        ),
        (
            re.compile(rf"(?:{_EN_DATE_WORD})(\d{{1,2}})([-.])(\d{{1,2}})\2(\d{{2}})" + _NUMERIC_END, re.I),
            lambda m, now: _numeric_day(now, m.group(1), m.group(3), m.group(4), order),
        ),
        (
            re.compile(rf"(?:{_EN_DATE_WORD})(\d{{1,2}})/(\d{{1,2}})" + _NUMERIC_END, re.I),
            lambda m, now: _numeric_day(now, m.group(1), m.group(2), None, order),
        ),
        (
            re.compile(_NUMERIC_START + r"(\d{1,2})[/.](\d{1,2})" + _CN_DATE_WORD),
            lambda m, now: _numeric_day(now, m.group(1), m.group(2), None, order),
        ),
    ]


_RULES: list[Rule] = [
    # Chinese.
    (
        re.compile(_NOT_QIAN + r"(今年|去年|前年)的?" + _CN_MONTH_DAY),
        lambda m, now: _month_day(now, m.group(2), m.group(3), now.year - _YEARS_BACK[m.group(1)]),
    ),
    (re.compile(r"大前天"), lambda m, now: _days_window(now, 3, 1)),
    (re.compile(_NOT_QIAN + r"前天"), lambda m, now: _days_window(now, 2, 1)),
    (re.compile(r"昨天|昨日|昨晚|昨儿|昨夜"), lambda m, now: _days_window(now, 1, 1)),
    (re.compile(_NOT_JIN + r"(?:今天|今日|今早|今晚|今儿)"), lambda m, now: _days_window(now, 0, 1)),
    (
        re.compile(_NOT_SHANG + r"(上+|这|本)个?" + _WEEK_CN + r"([一二三四五六日天末])"),
        lambda m, now: (
            _weekend(now, _back(m.group(1)))
            if m.group(2) == "末"
            else _weekday(now, _CN_WEEKDAYS[m.group(2)], _back(m.group(1)))
        ),
    ),
    (
        re.compile(_NOT_SHANG + r"(上+|这|本)个?" + _WEEK_CN),
        lambda m, now: (
            _week_start(now, _back(m.group(1))),
            _week_start(now, _back(m.group(1)) - 1),
            timedelta(days=2),
        ),
    ),
    (
        re.compile(r"(?:周|星期|礼拜)([一二三四五六日天])"),
        lambda m, now: _weekday(now, _CN_WEEKDAYS[m.group(1)], None),
    ),
    (re.compile(_CN_NUM + r"(?:天|日)(?:以)?前"), _with_count(_n_days_ago, _cn_count)),
    (re.compile(_CN_NUM + r"个?(?:周|星期|礼拜)(?:以)?前"), _with_count(_weeks_ago, _cn_count)),
    (re.compile(_NOT_SHANG + r"(上+)个?月"), lambda m, now: _month(now, _back(m.group(1)))),
    (re.compile(r"(?:这|本)个?月"), lambda m, now: _month(now, 0)),
    (re.compile(r"半年(?:以)?前"), lambda m, now: _months_ago(now, 6)),
    (re.compile(_CN_NUM + r"个月(?:以)?前"), _with_count(_months_ago, _cn_count)),
    (re.compile(_CN_NUM + r"年(?:以)?前"), _with_count(lambda now, n: _year(now, n), _cn_count)),
    (re.compile(_NOT_QIAN + r"前年"), lambda m, now: _year(now, 2)),
    (re.compile(r"去年"), lambda m, now: _year(now, 1)),
    (re.compile(_NOT_JIN + r"今年"), lambda m, now: _year(now, 0)),
    (
        re.compile(r"(\d{4}|[〇零一二三四五六七八九]{4})年" + _CN_MONTH_DAY),
        lambda m, now: _month_day(now, m.group(2), m.group(3), _cn_year(m.group(1))),
    ),
    (  # "23年4月4日": a year by its last two digits, only before a month ("23年" alone may be 23 years)
        re.compile(r"(?<![\d.])(\d{2})年" + _CN_MONTH_DAY),
        lambda m, now: _month_day(now, m.group(2), m.group(3), _full_year(m.group(1), now)),
    ),
    (
        re.compile(r"(?<![\d/.-])((?:19|20)\d{2})([-/.])(\d{1,2})\2(\d{1,2})(?![\d/-]|\.\d)"),
        lambda m, now: _absolute_day(now, int(m.group(3)), int(m.group(4)), int(m.group(1))),
    ),
    (
        re.compile(r"(?<![\d个])" + _CN_MONTH_DAY),
        # After a year ("2025年2月29日") the day is that year's or none, not the latest leap day.
        lambda m, now: _month_day(
            now, m.group(1), m.group(2), None, not m.string.endswith("年", 0, m.start())
        ),
    ),
    (
        re.compile(r"(\d{4}|[〇零一二三四五六七八九]{4})年(?!前|以前)"),
        lambda m, now: _absolute_year(now, _cn_year(m.group(1)) or 0),
    ),
    (re.compile(r"前几天|这几天|前些天|前两天"), lambda m, now: _recent(now, 7)),
    (re.compile(r"最近|近来|近期"), lambda m, now: _recent(now, 14)),
    # English.
    (re.compile(r"\bthe day before yesterday\b", re.I), lambda m, now: _days_window(now, 2, 1)),
    (re.compile(r"\bthe night before last\b", re.I), lambda m, now: _days_window(now, 2, 1)),
    (re.compile(r"\byesterday\b|\blast night\b", re.I), lambda m, now: _days_window(now, 1, 1)),
    (
        re.compile(r"\btoday\b|\btonight\b|\bthis (?:morning|afternoon|evening)\b", re.I),
        lambda m, now: _days_window(now, 0, 1),
    ),
    (re.compile(rf"\b{_EN_NUM} days? ago\b", re.I), _with_count(_n_days_ago, _en_count)),
    (re.compile(rf"\b{_EN_NUM} weeks? ago\b", re.I), _with_count(_weeks_ago, _en_count)),
    (re.compile(rf"\b{_EN_NUM} months? ago\b", re.I), _with_count(_months_ago, _en_count)),
    (re.compile(rf"\b{_EN_NUM} years? ago\b", re.I), _with_count(lambda now, n: _year(now, n), _en_count)),
    (re.compile(r"\blast weekend\b", re.I), lambda m, now: _weekend(now, 1)),
    (re.compile(r"\bthis weekend\b", re.I), lambda m, now: _weekend(now, 0)),
    (
        re.compile(r"\blast (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I),
        lambda m, now: _weekday(now, _EN_WEEKDAYS[m.group(1).lower()], 1),
    ),
    (
        re.compile(r"\b(?:on |this )?(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I),
        lambda m, now: _weekday(now, _EN_WEEKDAYS[m.group(1).lower()], None),
    ),
    (
        re.compile(r"\bthe week before last\b", re.I),
        lambda m, now: (_week_start(now, 2), _week_start(now, 1), timedelta(days=2)),
    ),
    (
        re.compile(r"\blast week\b", re.I),
        lambda m, now: (_week_start(now, 1), _week_start(now, 0), timedelta(days=2)),
    ),
    (
        re.compile(r"\bthis week\b", re.I),
        lambda m, now: (_week_start(now, 0), _week_start(now, -1), timedelta(days=2)),
    ),
    (re.compile(r"\bthe month before last\b", re.I), lambda m, now: _month(now, 2)),
    (re.compile(r"\blast month\b", re.I), lambda m, now: _month(now, 1)),
    (re.compile(r"\bthis month\b", re.I), lambda m, now: _month(now, 0)),
    (re.compile(r"\blast year\b", re.I), lambda m, now: _year(now, 1)),
    (re.compile(r"\bthis year\b", re.I), lambda m, now: _year(now, 0)),
    (
        re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH_NAME}(?:,? (\d{{4}}|{_SHORT_YEAR}))?"),
        lambda m, now: _absolute_day(
            now, _EN_MONTHS[m.group(2).lower()], int(m.group(1)), _full_year(m.group(3), now)
        ),
    ),
    (
        re.compile(rf"\b{_MONTH_NAME} (\d{{1,2}})(?:st|nd|rd|th)?\b(?:,? (\d{{4}}|{_SHORT_YEAR}))?"),
        lambda m, now: _absolute_day(
            now, _EN_MONTHS[m.group(1).lower()], int(m.group(2)), _full_year(m.group(3), now)
        ),
    ),
    (
        re.compile(rf"\b{_MONTH_NAME}(?:,? (?:(\d{{4}})\b|({_SHORT_YEAR})))?\b"),
        lambda m, now: _absolute_month(
            now, _EN_MONTHS[m.group(1).lower()], _full_year(m.group(2) or m.group(3), now)
        ),
    ),
    (
        re.compile(r"\b(?:in |since |during |of )?((?:19|20)\d{2})\b"),
        lambda m, now: _absolute_year(now, int(m.group(1))),
    ),
    (  # "back in '19", "summer of ’19"
        re.compile(r"(?:\b(?:in|since|during|of) )?(" + _SHORT_YEAR + ")"),
        lambda m, now: _absolute_year(now, _full_year(m.group(1), now) or 0),
    ),
    (
        re.compile(r"\b(?:the|these) (?:past|last) (?:few|couple(?: of)?) days\b", re.I),
        lambda m, now: _recent(now, 7),
    ),
    (re.compile(r"\b(?:recently|lately|the other day)\b", re.I), lambda m, now: _recent(now, 14)),
]


_NUMERIC_RULES: dict[NumericDateOrder, list[Rule]] = {
    "month_first": _numeric_rules("month_first"),
    "day_first": _numeric_rules("day_first"),
}


def in_zone(now: datetime, zone: str | None) -> datetime:
    """`now` in the time zone a chat counts its days in: None keeps its own offset, "local" is the
    machine's zone, anything else an IANA name ("Asia/Shanghai"); raises ValueError for an unknown one.
    A time whose date in that zone would fall off the calendar (before year 1, after 9999) keeps its
    own offset."""
    if zone is None:
        return now
    target: ZoneInfo | None = None  # astimezone() without one: the machine's zone
    if zone != LOCAL_ZONE:
        try:
            target = ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(
                f"unknown time zone {zone!r}: use 'local' or a name such as 'Asia/Shanghai'"
            ) from exc
    try:
        return now.astimezone(target)
    except OverflowError:
        return now


def parse_time_hints(
    text: str, now: datetime, numeric_date_order: NumericDateOrder = "month_first"
) -> list[TimeHint]:
    """Every time expression in `text`, left to right, non-overlapping: where expressions overlap,
    the longest wins, then the one starting first ("三天前天气" is 三天前, not 前天). A date without a
    year is the latest such day not after `now`; `numeric_date_order` reads "4/5" as April 5
    ("month_first") or 4 May ("day_first").

    `now` must be timezone-aware; days and weeks are counted in its timezone. Full-width forms read
    as their ASCII ones ("２０２５-３-５", "３ ｄａｙｓ ａｇｏ"); spans and texts are those of `text`.
    """
    if now.tzinfo is None:
        raise ValueError("parse_time_hints needs a timezone-aware `now`")
    folded = half_width(text)  # one character for one: the spans hold in `text`
    rules = _RULES + _NUMERIC_RULES[numeric_date_order]
    found = [(m, make) for pattern, make in rules for m in pattern.finditer(folded)]
    found.sort(key=lambda item: (-len(item[0].group(0)), item[0].start()))  # stable: rule order next
    hints: list[TimeHint] = []
    for m, make in found:
        if any(m.start() < h.span[1] and h.span[0] < m.end() for h in hints):
            continue
        try:
            window = make(m, now)
        except (ValueError, OverflowError):  # "3000年前", "10**20 days ago": off the calendar
            continue
        if window is not None:
            hints.append(TimeHint(window[0], window[1], window[2], m.span(), text[m.start() : m.end()]))
    return sorted(hints, key=lambda h: h.span)
