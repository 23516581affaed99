import pytest

from memory.persons.names import clean_name
from memory.persons.naming import choose_person_name, vet_suggested_name


def test_card_is_preferred_over_nickname():
    assert choose_person_name("小红", "Hong Nick", "10001", taken=[]) == "小红"


def test_nickname_when_card_is_empty_or_emoji_only():
    assert choose_person_name("", "Alice", "10001", taken=[]) == "Alice"
    assert choose_person_name("🌸🌸", "Alice", "10001", taken=[]) == "Alice"
    assert choose_person_name("  ", None, "10001", taken=[]) == "10001"


def test_whitespace_and_decoration_are_cleaned():
    assert choose_person_name("  🌸 小  红 🌸 ", None, "1", taken=[]) == "小 红"


def test_collision_adds_deterministic_suffix_from_user_id():
    first = choose_person_name("小红", None, "123456789", taken=["小红"])
    again = choose_person_name("小红", None, "123456789", taken=["小红"])
    assert first == again == "小红#6789"


def test_collision_is_case_and_width_insensitive_and_unique():
    taken = ["ALICE", "Alice#6789"]
    name = choose_person_name("alice", None, "123456789", taken=taken)
    assert name.lower() not in {t.lower() for t in taken}
    assert name.startswith("alice#")


def test_long_names_are_cut_without_splitting_a_character():
    card = "很长很长的群名片" * 5
    name = choose_person_name(card, None, "42", taken=[], max_chars=8)
    assert name == "很长很长的群名片"
    with_suffix = choose_person_name(card, None, "987654", taken=[name], max_chars=8)
    assert len(with_suffix) <= 8 and with_suffix.endswith("#7654")


def test_empty_user_id_is_rejected():
    with pytest.raises(ValueError, match="user_id"):
        choose_person_name("小红", None, "", taken=[])


def test_suggested_name_is_checked_against_collisions():
    assert vet_suggested_name(" 红红 ", taken=["小明"]) == "红红"
    assert vet_suggested_name("小明", taken=["小明"]) is None
    assert vet_suggested_name("😀", taken=[]) is None
    assert vet_suggested_name("x" * 40, taken=[]) is None


def test_cut_never_splits_an_emoji_cluster():
    family = "\U0001f469\u200d\U0001f469\u200d\U0001f467"
    name = choose_person_name("ab" + family + "cd", None, "1", taken=[], max_chars=4)
    assert name == "ab"


def test_brackets_that_belong_to_the_name_are_kept() -> None:
    assert clean_name("Tom（汤姆）") == "Tom(汤姆)"
    assert clean_name("(汤姆)Tom") == "(汤姆)Tom"
    assert clean_name("【阿红】") == "阿红"
    assert clean_name("Tom)") == "Tom"


def test_zero_width_and_bidi_controls_leave_a_name_but_an_emoji_stays_whole() -> None:
    """A zero-width joiner between two letters was kept ("阿\u200d明" looked like 阿明 and was not it);
    the one inside an emoji sequence still is."""
    assert clean_name("阿\u200d明") == "阿明"
    assert clean_name("\u202e小\u200b红\u2066\u2069\ufeff") == "小红"
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert clean_name(f"小{family}红") == f"小{family}红"
    assert clean_name("\u200b\u200e\u2060") == ""
