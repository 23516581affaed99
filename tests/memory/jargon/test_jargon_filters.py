from collections.abc import Sequence

from memory.jargon.filters import (
    FilterParams,
    filter_candidates,
    is_junk,
    mask_mentions,
    reject_reason,
    usable_messages,
)
from memory.jargon.stats import HistoryStats
from memory.jargon.types import Candidate, MinerMessage

WINDOW = [
    MinerMessage("1", "这波操作yyds", "alice"),
    MinerMessage("2", "yyds yyds", "bob"),
    MinerMessage("3", "我也觉得yyds", "bot", is_bot=True),
]
PARAMS = FilterParams()


def cand(content: str, *keys: str) -> Candidate:
    return Candidate(content, keys or ("1",), 1.0)


def test_bot_messages_are_not_usable() -> None:
    assert [m.key for m in usable_messages(WINDOW)] == ["1", "2"]


def test_memory_commands_are_neither_evidence_nor_statistics() -> None:
    """Found by the English QA pass: `/what glorp` was mined as a use of "glorp", so /what showed the
    members' own questions as the examples of how the group uses its word, and counted them."""
    window = [
        MinerMessage("1", "another glorp in the deploy script", "alice"),
        MinerMessage("2", "/what glorp", "bob"),
        MinerMessage("3", "@群忆 /what glorp", "carol"),
        MinerMessage("4", "glorp means a dumb tiny bug", "dave"),
    ]
    assert [m.key for m in usable_messages(window)] == ["1", "4"]
    result = filter_candidates([cand("glorp", "1", "2", "3", "4")], window, PARAMS)
    assert [c.message_keys for c in result.kept] == [("1", "4")]
    stats = HistoryStats.build(window)
    assert stats.count("glorp") == 2 and stats.occurrences("glorp").df == 2


def test_unknown_and_bot_message_keys_are_dropped() -> None:
    result = filter_candidates([cand("yyds", "1", "99", "3"), cand("绝绝子", "42")], WINDOW, PARAMS)
    assert [(c.content, c.message_keys) for c in result.kept] == [("yyds", ("1",))]
    assert result.dropped == [("绝绝子", "unknown_message")]


def test_names_and_aliases_are_dropped() -> None:
    result = filter_candidates(
        [cand("小红"), cand("小红姐姐"), cand("蚌埠住了")], WINDOW, PARAMS, names=["小红"]
    )
    assert [c.content for c in result.kept] == ["蚌埠住了"]
    assert {reason for _, reason in result.dropped} == {"name"}


def test_mentions_urls_numbers_punctuation_are_junk() -> None:
    for term in [
        "@小红",
        "https://example.com/a",
        "www.qq.com",
        "12345",
        "3.14",
        "！？。。",
        "哈哈哈哈",
        "......",
    ]:
        assert is_junk(term), term
    for term in ["u1s1", "0帧起手", "yyds", "he tui"]:
        assert not is_junk(term), term
    assert mask_mentions("@小红 你看 https://x.cn/a 笑死").split() == ["你看", "笑死"]


def test_length_limits() -> None:
    params = FilterParams(min_chars=2, max_chars=6)
    assert reject_reason("绝", params) == "length"
    assert reject_reason("一二三四五六七", params) == "length"
    assert reject_reason("绝绝子", params) is None


def test_stop_words_and_stop_phrases() -> None:
    assert reject_reason("我们", PARAMS) == "stop_word"
    assert reject_reason("我也是", PARAMS) == "stop_word"
    assert reject_reason("of the", PARAMS) == "stop_word"
    assert reject_reason("我也是醉了", PARAMS) is None


def test_leading_particle_is_dropped_but_words_starting_with_it_are_not() -> None:
    assert reject_reason("的微博视频", PARAMS) == "particle"
    assert reject_reason("的确良", PARAMS) is None


def test_an_english_article_at_either_end_is_dropped_but_not_inside_or_in_a_word() -> None:
    for term in ["a skronk", "The Pizza Tax", "an oof", "pays the", "skronk a"]:
        assert reject_reason(term, PARAMS) == "article", term
    for term in ["skronk", "pizza tax", "touch the grass", "A股", "theory", "ate"]:
        assert reject_reason(term, PARAMS) is None, term


def test_known_terms_are_excluded_after_normalisation() -> None:
    result = filter_candidates([cand("ＹＹＤＳ"), cand("xswl")], WINDOW, PARAMS, exclude=["yyds"])
    assert [c.content for c in result.kept] == ["xswl"]
    assert result.dropped == [("ＹＹＤＳ", "known")]


def test_duplicates_merge_their_evidence() -> None:
    result = filter_candidates([cand("YYDS", "1"), cand("yyds", "2")], WINDOW, PARAMS)
    assert len(result.kept) == 1
    assert result.kept[0].message_keys == ("1", "2")


def test_absurd_batch_is_dropped_whole() -> None:
    many = [cand(f"词{chr(0x4E00 + i)}{chr(0x4E80 + i)}") for i in range(5)]
    assert len(filter_candidates(many, WINDOW, FilterParams(max_batch=5)).kept) == 5
    result = filter_candidates(many, WINDOW, FilterParams(max_batch=4))
    assert result.batch_dropped and result.kept == []
    assert all(reason == "batch" for _, reason in result.dropped)


def test_a_long_text_is_masked_exactly_as_a_short_one_would_be() -> None:
    # Long texts are masked piece by piece; no URL or mention may be cut at a piece's edge.
    line = "{n}. 报名+1 www.jie{n}long.com @小明{n} https://x.cn/{n}?a=b 带水\n"
    text = "".join(line.format(n=n) for n in range(5000)) + "尾巴@lastone"
    masked = mask_mentions(text)
    assert len(text) > 100_000
    assert masked.splitlines() == [mask_mentions(line.format(n=n)).rstrip("\n") for n in range(5000)] + [
        "尾巴 "
    ]
    assert "jie" not in masked and "@" not in masked and "x.cn" not in masked


def assert_drops(junk: list[str], words: list[str], reason: str, names: Sequence[str] = ()) -> None:
    """`filter_candidates` drops each of `junk` for `reason` and keeps `words`, in order."""
    window = [MinerMessage("1", " ".join(junk + words), "alice")]
    result = filter_candidates([cand(t) for t in junk + words], window, PARAMS, names=names)
    assert [c.content for c in result.kept] == words
    assert result.dropped == [(t, reason) for t in junk]


def test_names_and_time_words_glued_to_pronouns_particles_or_greetings_are_dropped() -> None:
    """Found by QA pass 16 replaying an office chat offline: "周六我", "大伟你", "小吴你", "谢谢悦悦" and
    "周四晚上" were proposed as slang. A time expression, or a member's name (known, part of a known
    one, or a name by jieba's tags) with only a pronoun, particle or greeting beside it, is how a
    message addresses someone or says when; the group's words beside them stay."""
    names = ["悦悦子", "悦悦表姐", "红姐", "张伟-后端", "吴敏"]
    junk = ["周六我", "大伟你", "小吴你", "谢谢悦悦", "周四晚上", "上周三", "表姐好"]
    words = ["冲塔", "老张烧烤", "打车发票", "我太南了", "我想静静", "在下杨过", "早八", "耿直boy"]
    assert_drops(junk, words, "address_or_time", names)


def test_a_time_word_with_only_a_light_verb_beside_it_is_dropped() -> None:
    """Found replaying the README's sample offline: "改周日" (要不改周日 / 改周日正好 / 幸好改周日了,
    three members) was proposed as slang. A time word with only a one-character verb beside it says
    when something happens; the group's words that hold a time word stay."""
    junk = ["改周日", "周日见", "改到周日", "改明天"]
    words = ["早八", "当代华佗", "秋名山车神", "今晚月色真美", "开炉", "打call"]
    assert_drops(junk, words, "address_or_time")


def test_a_place_name_with_a_station_road_or_number_after_it_is_dropped() -> None:
    """Found replaying the README's sample offline: "九溪公交站" (where the hike met, three messages by
    two members) was proposed as slang. A place name jieba knows followed only by a station, road,
    street or number is an address; slang a place name begins, and a place name alone, stay."""
    junk = ["九溪公交站", "南京西路", "杭州东站", "中关村大街"]
    words = ["亚洲蹲", "巴黎孝子", "走钻石路", "乌鸡鲅鱼", "九溪", "心动的信号"]
    assert_drops(junk, words, "place")
