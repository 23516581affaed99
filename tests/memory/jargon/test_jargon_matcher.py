import random

from memory.jargon.matcher import JargonMatcher, Match
from memory.jargon.spans import latin_edges_ok
from memory.text.mapped import fold


def test_chinese_terms_match_as_substrings() -> None:
    matcher = JargonMatcher(["绝绝子", "破防"])
    assert matcher.find("这家店真的绝绝子，我直接破防了") == [Match("绝绝子", 5, 8), Match("破防", 12, 14)]


def test_latin_terms_match_only_on_word_boundaries() -> None:
    matcher = JargonMatcher(["ok", "he tui"])
    assert matcher.find("this book is fine") == []
    assert matcher.find("the tuition") == []
    assert matcher.terms_in("ok了，表演一个he tui") == ["ok", "he tui"]
    assert matcher.terms_in("OK!") == ["ok"]


def test_full_width_and_case_are_normalised_and_positions_are_original() -> None:
    matcher = JargonMatcher(["yyds"])
    text = "真的ＹＹＤＳ！"
    [match] = matcher.find(text)
    assert (match.term, text[match.start : match.end]) == ("yyds", "ＹＹＤＳ")


def test_emoji_and_odd_unicode_terms() -> None:
    matcher = JargonMatcher(["🐶头", "e\u0301clair", "C牛马O"])
    assert matcher.terms_in("狗🐶头保命") == ["🐶头"]
    assert matcher.terms_in("un \u00e9clair") == ["e\u0301clair"]  # composed vs decomposed é
    assert matcher.terms_in("尊贵的c牛马o来了") == ["C牛马O"]


def test_each_term_once_and_longest_wins_when_nested() -> None:
    matcher = JargonMatcher(["yyds", "yyds永远的神", "绝子", "绝绝子", "子弹"])
    found = matcher.find("yyds永远的神，还是yyds，绝绝子弹")
    assert [m.term for m in found] == ["yyds永远的神", "yyds", "绝绝子", "子弹"]
    assert found[1].start == 11  # the inner "yyds" of the longer term was not reported


def test_empty_and_duplicate_terms() -> None:
    assert JargonMatcher([]).find("anything") == []
    matcher = JargonMatcher(["", "  ", "YYDS", "yyds"])
    assert len(matcher) == 1
    assert matcher.terms_in("yyds") == ["YYDS"]


def test_ten_thousand_terms() -> None:
    rng = random.Random(3)
    cjk = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    latin = "abcdefghijklmnopqrstuvwxyz"
    terms: set[str] = set()
    while len(terms) < 10_000:
        if rng.random() < 0.7:
            terms.add("".join(rng.choices(cjk, k=rng.randint(2, 5))))
        else:
            terms.add("".join(rng.choices(latin, k=rng.randint(3, 7))))
    term_list = sorted(terms)
    matcher = JargonMatcher(term_list)
    assert len(matcher) == 10_000
    chosen = rng.sample(term_list, 200)
    text = "，".join(chosen) + "。"
    found = matcher.find(text)
    norm = fold(text)
    spans = []
    for m in found:  # every match is genuine
        assert fold(text[m.start : m.end]) == fold(m.term)
        assert latin_edges_ok(norm, m.start, m.end)
        spans.append((m.start, m.end))
    assert len({m.term for m in found}) == len(found)
    for term in chosen:  # every inserted term is reported, or lies inside a longer reported match
        start = text.index(term)
        inside = any(a <= start and start + len(term) <= b for a, b in spans)
        assert term in {m.term for m in found} or inside, term
    # a Latin term embedded in a longer word is not found
    word = next(t for t in chosen if t.isascii())
    assert word not in matcher.terms_in(f"x{word}y")
