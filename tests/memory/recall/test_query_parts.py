import pytest

from memory.recall.dedupe import content_key
from memory.recall.fusion import reciprocal_rank_fusion
from memory.recall.keywords import keyword_overlap, query_keywords, stem
from memory.recall.preferences import extract_preferences
from memory.recall.quotes import extract_quotes, quote_match
from memory.text import normalize


def test_quotes_in_every_style() -> None:
    text = "他说的\"冰美式\"、“燕麦拿铁”和「周末爬山」，还有 'sexual compulsions' 但 don't 不算"
    assert [q.key for q in extract_quotes(text)] == ["冰美式", "燕麦拿铁", "周末爬山", "sexual compulsions"]
    assert extract_quotes('"a" and 「好」') == []


def test_the_outermost_of_nested_quotes_is_the_phrase() -> None:
    assert [q.phrase for q in extract_quotes("谁说过「打本“可以”」？")] == ["打本“可以”"]
    assert [q.phrase for q in extract_quotes('“他说"冲了"就走” and 『改天』')] == ['他说"冲了"就走', "改天"]
    assert [q.phrase for q in extract_quotes("'golf' 「she said 'hello there'」")] == [
        "golf",
        "she said 'hello there'",
    ]


def test_quote_match_is_verbatim_after_normalisation() -> None:
    quotes = extract_quotes("「周末爬山」")
    assert quote_match(quotes, normalize("下次周末爬山带水")) == 1.0
    assert quote_match(quotes, normalize("周末去 爬山")) == 0.0


def test_keywords_drop_stop_words_and_stem_english() -> None:
    assert [k.match for k in query_keywords("What did Caroline paint in her paintings?")] == [
        "carolin",
        "paint",
    ]
    assert [k.term for k in query_keywords("我们周末去哪里爬山了")] == ["周末", "爬山"]
    assert [k.term for k in query_keywords("上次开炉是哪天？")] == ["开炉"], "question words, not topics"
    assert stem("families") == "famili" and stem("camping") == "camp" and stem("cat") == "cat"
    assert stem("周末") == "周末" and stem("2024") == "2024"
    assert [k.term for k in query_keywords("what is it")] == ["what", "is", "it"], "all stop words: keep them"


def test_keyword_overlap_counts_words_by_stem() -> None:
    keywords = query_keywords("painting sunrise lake")
    assert keyword_overlap(keywords, normalize("I painted that lake sunrise")) == 1.0
    assert keyword_overlap(keywords, normalize("a repainted lake")) == 1 / 3
    car = query_keywords("car")
    assert keyword_overlap(car, normalize("take care")) == 0.0, "a stem is not a prefix"
    assert keyword_overlap(car, normalize("both cars broke")) == 1.0
    exact = query_keywords("painting", use_stems=False)
    assert keyword_overlap(exact, normalize("I painted")) == 0.0
    assert keyword_overlap(exact, normalize("my painting")) == 1.0


def test_preferences_in_english_and_chinese() -> None:
    kinds = {p.kind: p.content for p in extract_preferences("I usually grab an oat latte before standup.")}
    assert kinds == {"habit": "grab an oat latte before standup"}
    zh = extract_preferences("我一般周末去朝阳公园骑行。我以前住在杭州")
    assert [(p.kind, p.content) for p in zh] == [("habit", "周末去朝阳公园骑行"), ("past", "住在杭州")]
    assert "习惯" in zh[0].document and "周末去朝阳公园骑行" in zh[0].document
    assert extract_preferences("今天天气不错") == []


def test_reciprocal_rank_fusion_rewards_agreement() -> None:
    fused = reciprocal_rank_fusion([(1.0, ["a", "b", "c"]), (1.0, ["b", "d"])], k=10)
    assert max(fused, key=fused.__getitem__) == "b"
    assert fused["a"] == 1 / 11 and fused["d"] == 1 / 12


def test_content_key_ignores_spacing_and_punctuation() -> None:
    assert content_key("周六 去爬山！") == content_key("周六去爬山") != content_key("周日去爬山")


def test_keyword_overlap_weighs_keywords_when_told() -> None:
    keywords = query_keywords("weekend pottery")
    weights = {"weekend": 0.5, "potteri": 3.0}
    assert keyword_overlap(keywords, normalize("pottery class"), weights) == pytest.approx(3.0 / 3.5)
    assert keyword_overlap(keywords, normalize("a long weekend"), weights) == pytest.approx(0.5 / 3.5)
    assert keyword_overlap(keywords, normalize("pottery class")) == 0.5, "unweighted: a plain share"
    nothing = {"weekend": 0.0, "potteri": 0.0}
    assert keyword_overlap(keywords, normalize("a long weekend"), nothing) == 0.5
