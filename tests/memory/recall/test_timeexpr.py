from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.recall.timeexpr import in_zone, parse_cn_number, parse_time_hints
from tests.child_reader import read_in_child

# A Thursday afternoon.
NOW = datetime(2026, 3, 12, 15, 0, tzinfo=UTC)


def window(text: str, now: datetime = NOW) -> tuple[str, str, str]:
    hints = parse_time_hints(text, now)
    assert len(hints) == 1, [h.text for h in hints]
    h = hints[0]
    assert text[h.span[0] : h.span[1]] == h.text, "the span and text are those of the question"
    return h.text, h.start.date().isoformat(), h.end.date().isoformat()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("上周三我们吃了什么", ("上周三", "2026-03-04", "2026-03-05")),
        ("上星期天去哪了", ("上星期天", "2026-03-08", "2026-03-09")),
        ("昨天说的那家店", ("昨天", "2026-03-11", "2026-03-12")),
        ("前天", ("前天", "2026-03-10", "2026-03-11")),
        ("大前天", ("大前天", "2026-03-09", "2026-03-10")),
        ("三天前", ("三天前", "2026-03-09", "2026-03-10")),
        ("十二天前", ("十二天前", "2026-02-28", "2026-03-01")),
        ("上周", ("上周", "2026-03-02", "2026-03-09")),
        ("上个月的聚会", ("上个月", "2026-02-01", "2026-03-01")),
        ("上上周三", ("上上周三", "2026-02-25", "2026-02-26")),
        ("上上上周三", ("上上上周三", "2026-02-18", "2026-02-19")),
        ("上上上上周末", ("上上上上周末", "2026-02-14", "2026-02-16")),
        ("上上上周", ("上上上周", "2026-02-16", "2026-02-23")),
        ("上上个月", ("上上个月", "2026-01-01", "2026-02-01")),
        ("上上上个月", ("上上上个月", "2025-12-01", "2026-01-01")),
        ("马上上周三", ("上周三", "2026-03-04", "2026-03-05")),
        ("去年", ("去年", "2025-01-01", "2026-01-01")),
        ("5月份", ("5月份", "2025-05-01", "2025-06-01")),
        ("2025年12月24日", ("2025年12月24日", "2025-12-24", "2025-12-25")),
        ("what did we do 3 days ago", ("3 days ago", "2026-03-09", "2026-03-10")),
        ("a week ago", ("a week ago", "2026-03-03", "2026-03-08")),
        ("yesterday", ("yesterday", "2026-03-11", "2026-03-12")),
        ("last week", ("last week", "2026-03-02", "2026-03-09")),
        ("last Wednesday", ("last Wednesday", "2026-03-04", "2026-03-05")),
        ("camping in June", ("June", "2025-06-01", "2025-07-01")),
        ("on 8 May, 2023", ("8 May, 2023", "2023-05-08", "2023-05-09")),
        ("去年3月的聚会", ("去年3月", "2025-03-01", "2025-04-01")),
        ("去年的五月份", ("去年的五月份", "2025-05-01", "2025-06-01")),
        ("前年12月24号", ("前年12月24号", "2024-12-24", "2024-12-25")),
        ("今年1月", ("今年1月", "2026-01-01", "2026-02-01")),
        ("2026-03-05 那天", ("2026-03-05", "2026-03-05", "2026-03-06")),
        ("what happened on 2025/12/31", ("2025/12/31", "2025-12-31", "2026-01-01")),
        ("三天前天气很好", ("三天前", "2026-03-09", "2026-03-10")),
        ("两年前天天加班", ("两年前", "2024-01-01", "2025-01-01")),
        # the English of 昨晚, 前天晚上, 今晚, 上上周, 上上个月, 前几天
        ("what did we say last night", ("last night", "2026-03-11", "2026-03-12")),
        ("the night before last", ("the night before last", "2026-03-10", "2026-03-11")),
        ("this evening", ("this evening", "2026-03-12", "2026-03-13")),
        ("this afternoon", ("this afternoon", "2026-03-12", "2026-03-13")),
        ("a couple days ago", ("a couple days ago", "2026-03-10", "2026-03-11")),
        ("the week before last", ("the week before last", "2026-02-23", "2026-03-02")),
        ("the month before last", ("the month before last", "2026-01-01", "2026-02-01")),
        ("in the past few days", ("the past few days", "2026-03-05", "2026-03-13")),
        # What a Chinese keyboard in full-width mode types: read as ASCII, reported as typed.
        ("３天前说了什么？", ("３天前", "2026-03-09", "2026-03-10")),
        ("，上周三，我们去哪了！", ("上周三", "2026-03-04", "2026-03-05")),
        ("２０２６-０３-０５那天", ("２０２６-０３-０５", "2026-03-05", "2026-03-06")),
        ("2025／12／31 的聚会", ("2025／12／31", "2025-12-31", "2026-01-01")),
        ("ｄｏ ｌａｓｔ　ｗｅｅｋ", ("ｌａｓｔ\u3000ｗｅｅｋ", "2026-03-02", "2026-03-09")),
        ("３ ｄａｙｓ ａｇｏ", ("３ ｄａｙｓ ａｇｏ", "2026-03-09", "2026-03-10")),
    ],
)
def test_expressions_become_windows(text: str, expected: tuple[str, str, str]) -> None:
    assert window(text) == expected


def test_months_ago_in_chinese_and_english_agree() -> None:
    cn = parse_time_hints("两个月前", NOW)[0]
    en = parse_time_hints("two months ago", NOW)[0]
    assert (cn.start, cn.end) == (en.start, en.end)
    assert cn.start < NOW - timedelta(days=61) < cn.end


def test_proximity_is_full_inside_and_fades_outside() -> None:
    hint = parse_time_hints("上周三", NOW)[0]
    assert hint.proximity(datetime(2026, 3, 4, 20, 0, tzinfo=UTC)) == 1.0
    assert 0 < hint.proximity(datetime(2026, 3, 5, 12, 0, tzinfo=UTC)) < 1
    assert hint.proximity(datetime(2026, 3, 11, 12, 0, tzinfo=UTC)) == 0.0


def test_days_follow_the_question_timezone() -> None:
    beijing = timezone(timedelta(hours=8))
    now = datetime(2026, 3, 12, 1, 0, tzinfo=beijing)  # still 11 March in UTC
    hint = parse_time_hints("昨天", now)[0]
    assert hint.start == datetime(2026, 3, 11, tzinfo=beijing)


def test_plain_words_are_not_times() -> None:
    assert parse_time_hints("May I ask what you like", NOW) == []
    assert parse_time_hints("我们周末一起爬山吧", NOW) == []


@pytest.mark.parametrize(
    "text",
    [
        "马上周末了去哪玩",
        "早上周会说了啥",
        "加上周末两天",
        "马上个月底了",
        "以前天天打游戏",
        "之前天气不好",
        "目前天气",
        "以前年轻的时候",
        "如今天气真热",
    ],
)
def test_words_that_run_into_a_time_word_are_no_time(text: str) -> None:
    assert parse_time_hints(text, NOW) == []


def test_chinese_numerals() -> None:
    assert [parse_cn_number(t) for t in ("两", "十", "十二", "二十", "二十三", "7", "几")] == [
        2,
        10,
        12,
        20,
        23,
        7,
        3,
    ]
    assert parse_cn_number("好") is None


def test_naive_now_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_time_hints("昨天", datetime(2026, 3, 12))


@pytest.mark.parametrize(
    "text",
    ["3000年前说了什么", "2500 years ago", "1000000 days ago", "99999个月前", "9999999999999999999999天前"],
)
def test_times_off_the_calendar_are_no_hint(text: str) -> None:
    hints = parse_time_hints(text + "，还有昨天", NOW)
    assert [h.text for h in hints] == ["昨天"]


def test_days_are_counted_in_the_configured_zone() -> None:
    monday_morning_in_beijing = datetime(2026, 11, 22, 23, 0, tzinfo=UTC)
    assert in_zone(monday_morning_in_beijing, None) is monday_morning_in_beijing
    beijing = in_zone(monday_morning_in_beijing, "Asia/Shanghai")
    assert (beijing.day, beijing.hour) == (23, 7)
    assert window("上周三", beijing)[1] == "2026-11-18"
    assert window("上周三", monday_morning_in_beijing)[1] == "2026-11-11", "in UTC it is still Sunday"
    with pytest.raises(ValueError, match="unknown time zone"):
        in_zone(monday_morning_in_beijing, "Mars/Base")


@pytest.mark.parametrize("text", ["2月29日", "2月29号", "Feb 29", "29 February", "February 29th"])
def test_a_leap_day_without_a_year_is_the_latest_one(text: str) -> None:
    """Found by the third QA pass: asked in a year without 29 February, "2月29日" gave no time at all
    (the latest February had no such day), and its digits were searched as words instead."""
    assert window(text)[1:] == ("2024-02-29", "2024-03-01")
    assert window(text, datetime(2028, 3, 1, tzinfo=UTC))[1:] == ("2028-02-29", "2028-03-01")


def test_a_day_no_month_has_is_still_no_day() -> None:
    for text in ("2月30日", "4月31日"):
        assert parse_time_hints(text, NOW) == [], text
    assert window("2025年2月29日") == ("2025年", "2025-01-01", "2026-01-01"), "a year without that day"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("what did we decide on 4/4?", ("4/4", "2025-04-04", "2025-04-05")),
        ("on 3/5", ("3/5", "2026-03-05", "2026-03-06")),
        ("since 3/15", ("3/15", "2025-03-15", "2025-03-16")),
        ("what happened before 2/28 then", ("2/28", "2026-02-28", "2026-03-01")),
        ("4/4/2023", ("4/4/2023", "2023-04-04", "2023-04-05")),
        ("3/15/2025 的会", ("3/15/2025", "2025-03-15", "2025-03-16")),
        ("on 25.12.2025", ("25.12.2025", "2025-12-25", "2025-12-26")),
        ("2023/4/4", ("2023/4/4", "2023-04-04", "2023-04-05")),
        ("2023-04-04", ("2023-04-04", "2023-04-04", "2023-04-05")),
        ("2023.4.4 那次", ("2023.4.4", "2023-04-04", "2023-04-05")),
        ("4/4那天说了什么", ("4/4", "2025-04-04", "2025-04-05")),
        ("4.4号定的", ("4.4号", "2025-04-04", "2025-04-05")),
        ("在3/1日", ("3/1日", "2026-03-01", "2026-03-02")),
        ("on 13/3", ("13/3", "2025-03-13", "2025-03-14")),
        ("on ４/４", ("４/４", "2025-04-04", "2025-04-05")),
    ],
)
def test_numeric_dates_are_days(text: str, expected: tuple[str, str, str]) -> None:
    """A numeric date (slashes, dots, dashes) is the day it names; without a year, the latest such day
    not after the question (4 April is still to come on 12 March 2026: the one of 2025 is meant)."""
    assert window(text) == expected


@pytest.mark.parametrize(
    ("text", "month_first", "day_first"),
    [
        ("on 4/5", "2025-04-05", "2025-05-04"),
        ("4/5那天", "2025-04-05", "2025-05-04"),
        ("3/4/2025", "2025-03-04", "2025-04-03"),
        ("on 3/25", "2025-03-25", "2025-03-25"),
        ("on 25/3", "2025-03-25", "2025-03-25"),
        ("12/31/2025", "2025-12-31", "2025-12-31"),
        ("2025/3/4", "2025-03-04", "2025-03-04"),
    ],
)
def test_an_ambiguous_numeric_date_follows_the_configured_order(
    text: str, month_first: str, day_first: str
) -> None:
    """Only a date whose parts could both be the month follows `numeric_date_order`; a part above 12 is
    the day, and a year first is always year/month/day."""
    assert [h.start.date().isoformat() for h in parse_time_hints(text, NOW)] == [month_first]
    assert [h.start.date().isoformat() for h in parse_time_hints(text, NOW, "day_first")] == [day_first]


@pytest.mark.parametrize(
    "text",
    [
        "3/5",
        "rated it 3/5 stars",
        "we won 2/1",
        "add 1/2 cup of sugar",
        "upgrade to version 4.4",
        "see /api/4/4 and https://example.com/3/4",
        "call 010-4-4",
        "4.4日元一个",
        "去5号线",
        "4/4号线",
        "4-4号",
        "on 13/13",
        "on 0/4",
        "on 2/30",
        "on 1.4/4",
        "won 4/4 games",
        "一半是1/2",
    ],
)
def test_numbers_that_are_no_date_are_no_time(text: str) -> None:
    """A score, a rating, a fraction, a version, a URL path, a phone number, a price or a metro line
    is no date: a slash date without a year needs a preposition of time or 号/日/那天."""
    assert parse_time_hints(text, NOW) == []
    assert parse_time_hints(text, NOW, "day_first") == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("what did we say on 4/4/23", ("4/4/23", "2023-04-04", "2023-04-05")),
        ("12/25/22", ("12/25/22", "2022-12-25", "2022-12-26")),
        ("on 25/12/99", ("25/12/99", "1999-12-25", "1999-12-26")),
        ("since 4.4.23", ("4.4.23", "2023-04-04", "2023-04-05")),
        ("back in '19", ("in '19", "2019-01-01", "2020-01-01")),
        ("summer of ’19", ("of ’19", "2019-01-01", "2020-01-01")),
        ("'95 was wild", ("'95", "1995-01-01", "1996-01-01")),
        ("March 5, '21", ("March 5, '21", "2021-03-05", "2021-03-06")),
        ("May '20", ("May '20", "2020-05-01", "2020-06-01")),
        ("23年4月4日那次", ("23年4月4日", "2023-04-04", "2023-04-05")),
        ("我们26年3月聚过", ("26年3月", "2026-03-01", "2026-04-01")),
    ],
)
def test_a_year_of_two_digits_is_the_latest_with_them(text: str, expected: tuple[str, str, str]) -> None:
    """ "on 4/4/23" and "back in '19" were no time at all: a year had to be written in full."""
    assert window(text) == expected


@pytest.mark.parametrize(
    "text",
    ["python 3.12.10", "call 4-4-23", "it's '19' I think", "干了23年", "rated 4/4/230", "in '190"],
)
def test_two_digits_that_are_no_year_are_no_time(text: str) -> None:
    """A version, a phone number, a quoted number, a count of years: no date (a dotted or dashed one
    needs a preposition of time before it)."""
    assert parse_time_hints(text, NOW) == []


@pytest.mark.parametrize(("text", "year"), [("3月15日", "2025"), ("March 15", "2025"), ("3月12日", "2026")])
def test_a_day_without_a_year_is_never_ahead_of_the_question(text: str, year: str) -> None:
    """Found while adding numeric dates: asked on 12 March, "3月15日" was three days ahead, in the
    current year, and matched nothing said yet; today itself is still this year's."""
    assert window(text)[1][:4] == year


# Runs of digits and of Chinese numerals before a count: each counts from the start of its run.
LONG_RUNS_READER = """
import json
from datetime import UTC, datetime
from memory.recall.timeexpr import parse_time_hints
now = datetime(2026, 3, 12, 15, 0, tzinfo=UTC)
texts = ["1" * 200_000, "二" * 200_000, "2" * 100_000 + " 三天前", "三" * 100_000 + "，3天前"]
print(json.dumps([[h.text for h in parse_time_hints(text, now)] for text in texts], ensure_ascii=False))
"""


def test_a_long_run_of_digits_or_numerals_is_read_at_once() -> None:
    """Found reviewing QA pass 17 (security): a count ("3天前", "三年前") could start inside a run of
    digits or numerals, each start reading the run to its end: a member's 20,000 digits or 二 took
    about 10 s in every recall of that message. Read in a child process with a 120 s guard (it takes
    milliseconds; the old patterns need well over ten minutes for these)."""
    found = read_in_child(LONG_RUNS_READER)
    assert found == [[], [], ["三天前"], ["3天前"]]
