import pytest

from memory.persons.pronouns import Gender, RecentPerson, find_pronouns, resolve_pronoun, resolve_pronouns

RECENT = [
    RecentPerson("red", 10, Gender.FEMALE),
    RecentPerson("ming", 12, Gender.MALE),
    RecentPerson("me", 13),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("她最近怎么样", "red"),
        ("他最近怎么样", "ming"),
        ("how is he doing", "ming"),
        ("what about her?", "red"),
        ("TA还好吗", "ming"),
    ],
)
def test_pronoun_resolves_to_most_recent_compatible_person(text, expected):
    assert resolve_pronoun(text, RECENT, exclude=["me"]) == expected


@pytest.mark.parametrize("text", ["他们去哪了", "其他人呢", "吉他弹得怎么样", "她和他怎么样", "今天天气不错"])
def test_unclear_or_no_pronoun_gives_none(text):
    assert resolve_pronoun(text, RECENT, exclude=["me"]) is None


def test_speaker_is_never_the_referent():
    assert resolve_pronoun("他还好吗", [RecentPerson("me", 5)], exclude=["me"]) is None


def test_unknown_gender_fits_any_pronoun_and_tie_is_unclear():
    tie = [RecentPerson("a", 7), RecentPerson("b", 7)]
    assert resolve_pronoun("她怎么样", tie) is None
    assert resolve_pronoun("她怎么样", [RecentPerson("a", 7)]) == "a"


def test_gender_breaks_a_tie():
    tie = [RecentPerson("a", 7, Gender.MALE), RecentPerson("b", 7, Gender.FEMALE)]
    assert resolve_pronoun("她怎么样", tie) == "b"


def test_stale_mentions_are_not_candidates():
    assert resolve_pronoun("她怎么样", [RecentPerson("a", 100.0)], now=5000.0, max_age=600.0) is None
    assert resolve_pronoun("她怎么样", [RecentPerson("a", 4800.0)], now=5000.0, max_age=600.0) == "a"


def test_spans_point_at_the_pronoun():
    text = "昨天见到她了，她还好"
    refs = resolve_pronouns(text, [RecentPerson("red", 1, Gender.FEMALE)])
    assert [text[r.span[0] : r.span[1]] for r in refs] == ["她", "她"]
    assert {r.person_id for r in refs} == {"red"}
    assert find_pronouns("其他吉他") == []
