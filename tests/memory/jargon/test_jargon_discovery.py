import json
import logging
import random
from pathlib import Path

import pytest

from memory import offload
from memory.jargon import discovery
from memory.jargon.discovery import Discoverer, DiscoveryParams, discover, discover_in, discover_in_runs
from memory.jargon.stats import HistoryStats
from memory.jargon.types import MinerMessage

FIXTURES = Path(__file__).parents[2] / "fixtures" / "jargon"
SPEAKERS = ["alice", "bob", "carol", "dave"]

# The group's in-joke, used by several people in different sentences.
IN_GROUP = [
    "刚才那个视频我真的蚌埠住了",
    "蚌埠住了家人们",
    "他一开口我就蚌埠住了",
    "谁看了不蚌埠住了",
    "老板讲话我当场蚌埠住了",
]
LATIN = ["xswl这也太离谱", "他那个表情XSWL", "真的xswl", "xswl 谁写的"]


def ordinary_lines() -> list[str]:
    data = json.loads((FIXTURES / "filler.json").read_text(encoding="utf-8"))
    return ["".join(turn.split()) for split in data.values() for dialogue in split for turn in dialogue]


def chat(extra: list[str], every: int = 6) -> list[MinerMessage]:
    """Ordinary lines with `extra` spread through them, speakers drawn at random (fixed seed)."""
    texts = ordinary_lines()
    for i, line in enumerate(extra):
        texts.insert(min(len(texts), (i + 1) * every), line)
    rng = random.Random(5)
    return [MinerMessage(f"m{i}", text, rng.choice(SPEAKERS)) for i, text in enumerate(texts)]


def contents(messages: list[MinerMessage], window_size: int = 30) -> set[str]:
    window = messages[-window_size:]
    return {c.content for c in discover(window, messages[:-window_size])}


def test_recurring_in_group_term_is_found() -> None:
    messages = chat(IN_GROUP, every=12)
    window = messages[-30:]
    found = discover(window, messages)
    by_content = {c.content: c for c in found}
    assert "蚌埠住了" in by_content
    keys = {m.key for m in window if "蚌埠住了" in m.text}
    assert set(by_content["蚌埠住了"].message_keys) == keys


# 上香 is a dictionary word (burning incense); this group says it for its coffee run, mostly "去上香".
INCENSE = [
    "你们都去了我去上香，有要带咖啡的吗",
    "早，今天谁去上香",
    "我一般听到刷墙就去上香冷静一下",
    "上香了，今天谁要",
    "小吴也开始上香了哈哈",
    "上香使人清醒",
    "周一上香，老规矩？",
    "周五上香",
    "那我也去上香吧",
]


def test_a_word_glued_to_a_motion_verb_is_proposed_without_it() -> None:
    """Found by QA pass 16: 上香 (~10 uses by 6 people) was mined only as 去上香, since the everyday
    word alone is too common in the background to stand out while 去+上香 is rare. The string is the
    word with a function word glued on, and the word is a unit by itself, so the word is proposed,
    with every window message using it as evidence."""
    messages = chat(INCENSE, every=10)
    window = messages[:100]
    by_content = {c.content: c for c in discover(window, messages)}
    assert "上香" in by_content and "去上香" not in by_content
    assert set(by_content["上香"].message_keys) == {m.key for m in window if "上香" in m.text}


# 开炉 is a dictionary word (firing a furnace); this group says it for going out for hotpot, often
# with a time word before it.
HOTPOT = [
    "话说是不是该开炉庆祝一下",
    "开炉！！！",
    "开炉+1，周五晚上？",
    "下次开炉什么时候",
    "下次开炉等论文投出去",
    "那下次开炉我请",
    "下班下班，开炉开炉！",
    "我提议开炉团建",
    "我们已经被开炉洗脑了",
]


def test_a_word_after_a_time_word_is_proposed_without_it() -> None:
    """Found replaying the README's sample offline: the group's 开炉 (hotpot; 20 uses by 6 people) was
    proposed only as 下次开炉, since the dictionary word alone is too common in the background to
    stand out. A time word at a string's edge is no part of the term: the word, a unit by itself, is
    proposed, with every window message using it as evidence."""
    messages = chat(HOTPOT, every=10)
    window = messages[:100]
    by_content = {c.content: c for c in discover(window, messages)}
    assert "开炉" in by_content and "下次开炉" not in by_content
    assert set(by_content["开炉"].message_keys) == {m.key for m in window if "开炉" in m.text}


def test_ordinary_words_are_not_found() -> None:
    found = contents(chat([]), window_size=40)
    assert found == set()


def test_latin_abbreviation_found_with_window_spelling() -> None:
    messages = chat(LATIN, every=15)
    window = [m for m in messages if "xswl" in m.text.lower()][-2:]
    found = {c.content for c in discover(window, messages)}
    assert found & {"XSWL", "xswl"}
    assert not any(len(c) > 4 and "xswl" in c.lower() for c in found)


def test_a_term_must_occur_in_the_window() -> None:
    messages = chat(IN_GROUP, every=6)
    window = [m for m in messages if "蚌埠" not in m.text][-10:]
    assert all("蚌埠" not in c.content for c in discover(window, messages))


def test_too_few_occurrences_or_one_speaker_is_not_enough() -> None:
    messages = chat(IN_GROUP[:2], every=6)
    assert "蚌埠住了" not in {c.content for c in discover(messages[-20:], messages)}
    lonely = [MinerMessage(m.key, m.text, "alice") for m in chat(IN_GROUP, every=6)]
    params = DiscoveryParams(min_speakers=2)
    assert "蚌埠住了" not in {c.content for c in discover(lonely, lonely, params)}


def test_bot_messages_names_and_known_terms_are_left_out() -> None:
    messages = chat(IN_GROUP, every=6)
    assert "蚌埠住了" not in {c.content for c in discover(messages, messages, exclude=["蚌埠住了"])}
    as_bot = [MinerMessage(m.key, m.text, m.speaker, is_bot="蚌埠" in m.text) for m in messages]
    assert "蚌埠住了" not in {c.content for c in discover(as_bot, as_bot)}
    named = [MinerMessage(m.key, m.text.replace("蚌埠住了", "@蚌埠住了 "), m.speaker) for m in messages]
    assert all("蚌埠" not in c.content for c in discover(named, named))


def test_incremental_discoverer_matches_from_scratch() -> None:
    messages = chat(IN_GROUP + LATIN, every=8)
    miner = Discoverer(history_size=10_000)
    miner.observe(messages[:-25])
    incremental = miner.run(messages[-25:])
    assert incremental == discover(messages[-25:], messages[:-25])
    assert incremental  # the fixture is meant to yield candidates


def test_history_is_bounded() -> None:
    messages = chat(IN_GROUP, every=6)
    miner = Discoverer(history_size=20)
    miner.observe(messages)
    assert len(miner.stats) == 20
    assert messages[0].key not in miner.stats


@pytest.mark.parametrize("text", ["", "！！！", "🐶🐶🐶", "a", "https://example.com"])
def test_degenerate_windows_yield_nothing(text: str) -> None:
    messages = [*chat([]), MinerMessage("x", text, "alice")]
    assert discover(messages[-1:], messages) == []


def test_a_flood_of_repeated_text_is_scanned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Long spam ("哈哈笑死" pasted thousands of times, by several people) would cost a scan of the
    whole history at every position and every length — minutes on the bot's event loop. Positions
    with the same surroundings are looked at once, and the in-joke next to the flood is still found."""
    flood = [MinerMessage(f"s{i}", "哈哈笑死" * 500 + str(i), SPEAKERS[i % 4]) for i in range(5)]
    messages = chat(IN_GROUP, every=12)
    window = [*messages[-30:], *flood]
    scans = 0
    original = HistoryStats.count

    def counted(self: HistoryStats, s: str) -> int:
        nonlocal scans
        scans += len(s) > self.index_n
        return original(self, s)

    monkeypatch.setattr(HistoryStats, "count", counted)
    found = {c.content for c in discover(window, messages)}
    assert "蚌埠住了" in found
    assert scans < 2_000, f"{scans} scans of the history"


def long_random_window(n: int, chars: int) -> list[MinerMessage]:
    """Long messages drawn from a small vocabulary (a fixed seed): nearly every substring recurs, so
    nothing is pruned and every one is counted against the whole history."""
    rng = random.Random(7)
    words = ["摸鱼", "躺平", "内卷", "破防", "yyds", "拔草", "种草", "打卡", "周末", "火锅", "底料", "集合"]
    return [
        MinerMessage(f"long{i}", "".join(rng.choice(words) for _ in range(chars // 2)), SPEAKERS[i % 4])
        for i in range(n)
    ]


def test_a_window_reads_at_most_its_share_of_history(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Twenty 20,000-character messages of a dozen words took a minute of scans (two hundred took
    over ten): past SCAN_CHARS_PER_WINDOW characters of history read, the rest of the window is left
    out with a warning; a chat-sized window never comes near it and finds what it found before."""
    window = long_random_window(4, 3_000)
    params = DiscoveryParams()
    unbounded = HistoryStats.build(window)
    discover_in(unbounded, window, params)
    history = unbounded.n_chars
    limit = 50 * history
    assert unbounded.scanned > 10 * limit  # what the limit is there to stop
    monkeypatch.setattr(discovery, "SCAN_CHARS_PER_WINDOW", limit)
    bounded = HistoryStats.build(window)
    with caplog.at_level(logging.WARNING):
        discover_in(bounded, window, params)
    # Checked before each position and each string: one more of either reads a few dozen histories.
    assert limit <= bounded.scanned < limit + 4 * (params.max_len + 2) * history
    assert any("limit of history" in r.getMessage() for r in caplog.records)
    monkeypatch.undo()
    messages = chat(IN_GROUP, every=12)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert {c.content for c in discover(messages[-30:], messages)} >= {"蚌埠住了"}
    assert not any("limit of history" in r.getMessage() for r in caplog.records)


def test_counts_follow_the_history_as_messages_come_and_go() -> None:
    """Counts of longer strings are kept between questions: a message added or evicted must still
    change them at once."""
    stats = HistoryStats(capacity=2)
    stats.add(MinerMessage("a", "蚌埠住了，蚌埠住了", "alice"))
    assert stats.count("蚌埠住了") == 2
    stats.add(MinerMessage("b", "真的蚌埠住了", "bob"))
    assert stats.count("蚌埠住了") == 3
    stats.add(MinerMessage("c", "今天吃什么", "carol"))  # the oldest message leaves the history
    assert stats.count("蚌埠住了") == 1
    assert stats.count("今天吃什么") == 1


@pytest.mark.parametrize("run_chars", [1, 60, 400])
async def test_discovery_in_runs_finds_what_one_call_finds(
    monkeypatch: pytest.MonkeyPatch, run_chars: int
) -> None:
    """The job takes discovery run by run, so that it can stop between runs: cut fine or coarse, it
    proposes the same candidates, keys, spellings and scores, in the same order, as in one call."""
    messages = chat(IN_GROUP + LATIN, every=8)
    window = messages[-60:]
    params = DiscoveryParams(max_candidates=50)
    names = ["阿红", "小明"]
    whole = discover_in(HistoryStats.build(messages), window, params, ["蚌埠"], names)
    assert len(whole) >= 2  # the fixture is meant to yield candidates
    monkeypatch.setattr(offload, "RUN_CHARS", run_chars)
    cut = await discover_in_runs(HistoryStats.build(messages), window, params, ["蚌埠"], iter(names))
    assert cut == whole


# 狗托 (a shill), said in the group as its own word; its lift over this history is about 15.
SHILL = ["这家店又是狗托刷的好评", "狗托太多了", "评论区全是狗托吧", "别信狗托", "我看是狗托在带节奏"]


@pytest.mark.parametrize(("last", "proposed"), [("狗托是什么意思", True), ("狗托又来了", False)])
async def test_a_string_members_ask_the_meaning_of_may_be_less_unusual(last: str, proposed: bool) -> None:
    """A member asking what a string means ("狗托是什么意思") is a sign it is the group's slang: it is
    proposed with a lift up to ASKED_LIFT under `min_lift` (17 here), by both discovery paths; the same
    uses without the question are not."""
    messages = chat([*SHILL, last], every=12)
    params = DiscoveryParams(min_lift=17.0)
    assert ("狗托" in {c.content for c in discover(messages, [], params)}) is proposed
    in_runs = await discover_in_runs(HistoryStats.build(messages), messages, params)
    assert ("狗托" in {c.content for c in in_runs}) is proposed
