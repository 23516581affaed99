from dataclasses import replace
from datetime import UTC, datetime

import pytest
import regex

from memory.persons import timeline_text
from memory.persons.card import PersonView, TimelineEntry, render_card
from memory.text import estimate_tokens

PERSON = PersonView(
    "p1",
    "小红",
    ["红红", "xiaohong", "小红", "阿红", "hong"],
    {"likes": ["猫", "火锅"], "job": "腾讯工程师", "location": "北京", "favorite:水果": "芒果"},
    [
        TimelineEntry(datetime(2024, 5, 20, tzinfo=UTC), "和男朋友吵架", ("m1",)),
        TimelineEntry(datetime(2024, 6, 1, tzinfo=UTC), "下个月去北京", ("m2",)),
    ],
)


def test_full_card_has_name_aliases_attributes_and_recent_timeline():
    card = render_card(PERSON, 500)
    lines = card.splitlines()
    assert lines[0] == "【小红】又名：红红、xiaohong、阿红"
    assert lines[1].startswith("资料：职业 腾讯工程师；住在 北京；喜欢 猫、火锅")
    assert "最喜欢的水果 芒果" in lines[1]
    assert lines[2] == "近况：2024-06-01 下个月去北京；2024-05-20 和男朋友吵架"


def test_a_member_who_left_the_chat_is_marked_after_the_name():
    card = render_card(replace(PERSON, left=True), 500)
    assert card.splitlines()[0] == "【小红(已退群)】又名：红红、xiaohong、阿红", (
        "an alias 小红 is still no other name"
    )


def test_a_card_in_an_english_chat_is_written_in_english():
    bobby = PersonView(
        "p2",
        "Bobby",
        ["Robert", "robert_s"],
        {"likes": ["cats", "hotpot"], "location": "Berlin", "favorite:band": "Blur"},
        [
            TimelineEntry(datetime(2026, 3, 30, tzinfo=UTC), timeline_text.declared("self", "Bobby")),
            TimelineEntry(datetime(2026, 4, 13, tzinfo=UTC), timeline_text.card_change("Bob", "Rob")),
            TimelineEntry(datetime(2026, 4, 14, tzinfo=UTC), "moved to Berlin"),
        ],
        left=True,
    )
    assert render_card(bobby, 500, language="en").splitlines() == [
        "Bobby (left) — also: Robert, robert_s",
        "Facts: lives in Berlin; likes cats, hotpot; favourite band Blur",
        "Recently: 2026-04-14 moved to Berlin; 2026-04-13 group card changed to “Bob” (was “Rob”);"
        " 2026-03-30 calls themselves “Bobby”",
    ]
    # The timeline keeps one stored form: a Chinese chat shows it as written.
    assert "自称「Bobby」" in render_card(bobby, 500)


@pytest.mark.parametrize("budget", [3, 5, 10, 20, 30, 45, 60, 80, 120])
def test_card_fits_the_budget_and_never_splits_a_character(budget):
    card = render_card(PERSON, budget)
    assert 0 < len(card) <= budget
    assert card.startswith("【")
    # every grapheme of the card is a whole grapheme of the full card's alphabet
    assert all(len(g) == 1 or g == "\r\n" for g in regex.findall(r"\X", card))


def test_lower_priority_sections_go_first():
    small = render_card(PERSON, 30)
    assert "小红" in small and "近况" not in small


def test_token_budget():
    card = render_card(PERSON, 1000, max_tokens=30)
    assert estimate_tokens(card) <= 30
    assert "近况" not in card


def test_emoji_name_is_cut_on_grapheme_boundary():
    family = "\U0001f469\u200d\U0001f469\u200d\U0001f467"
    card = render_card(PersonView("p", "ab" + family + "cd" * 10), 6)
    assert family[:2] not in card or family in card
    assert len(card) <= 6


def test_budget_must_be_positive():
    with pytest.raises(ValueError, match="max_chars"):
        render_card(PERSON, 0)


@pytest.mark.parametrize(
    ("habit", "shown"),
    [
        ("go running in the morning with my dog", "go running in the morning…"),
        ("can't do anything before 9am on weekdays", "can't do anything before 9am…"),
        (
            "一般都周五晚上下班以后都和公司同事一起去黄龙体育中心打羽毛球然后吃夜宵",
            "一般都周五晚上下班以后都和公司同事一起去黄龙体育中心打…",
        ),
    ],
)
def test_a_long_fact_is_cut_after_a_whole_word(habit: str, shown: str):
    """A fact too long for its card was cut anywhere ("…before 9am on wee…", "…打羽毛…")."""
    person = PersonView("p3", "Priya", [], {"habit": [habit]}, [])
    assert render_card(person, 500, language="en").splitlines()[1] == f"Facts: habit {shown}"
