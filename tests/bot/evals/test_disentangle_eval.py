"""IRC parsing, gold reading and the clustering metrics on hand-computed cases."""

from __future__ import annotations

import itertools
from datetime import date
from pathlib import Path

import pytest

from bot.evals.data_files import DataError
from bot.evals.disentangle import (
    FloorHeuristic,
    evaluate,
    exact_f1,
    first_scored,
    format_clusters,
    gold_clusters,
    load_chats,
    max_weight_matching,
    one_to_one,
    parse_links,
    parse_raw,
    vi_score,
)

DEV = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "irc_disentanglement"


def sets(*groups: str) -> list[frozenset[str]]:
    return [frozenset(g) for g in groups]


def test_vi_identical_is_100_and_merge_costs_one_bit() -> None:
    gold = sets("ab", "cd")
    assert vi_score(gold, gold) == pytest.approx(100.0)
    # Merging both: H(gold | pred) = 1 bit, H(pred | gold) = 0; log2 4 = 2.
    assert vi_score(gold, sets("abcd")) == pytest.approx(50.0)
    with pytest.raises(ValueError):
        vi_score(gold, sets("abc"))


def test_one_to_one_hand_case() -> None:
    # Best pairing: {a,b,c}↔{a,b} (2) and {d}↔{c,d} (1): 3 of 4 items.
    assert one_to_one(sets("abc", "d"), sets("ab", "cd")) == pytest.approx(75.0)
    assert one_to_one(sets("ab", "cd"), sets("ab", "cd")) == pytest.approx(100.0)


def test_max_weight_matching_beats_greedy_and_handles_rectangles() -> None:
    assert max_weight_matching([[3, 2], [3, 0]]) == 5  # greedy would take 3 + 0
    assert max_weight_matching([[1, 5, 2]]) == 5
    assert max_weight_matching([[1], [5], [2]]) == 5
    matrix = [[4, 1, 3, 0], [2, 0, 5, 1], [3, 2, 2, 6]]
    brute = max(sum(matrix[r][c] for r, c in enumerate(p)) for p in itertools.permutations(range(4), 3))
    assert max_weight_matching(matrix) == brute


def test_exact_f1_leaves_out_single_message_conversations() -> None:
    gold = sets("ab", "cd", "e")
    pred = sets("ab", "c", "d", "e")
    # precision 1/1, recall 1/2
    assert exact_f1(gold, pred) == pytest.approx(200 / 3)
    assert exact_f1(gold, sets("abcde")) == 0.0


def test_gold_components_link_through_context_lines() -> None:
    links = parse_links(["999 1001 -", "1002 999 -", "1003 1003 -", "1004 1003 -"])
    assert first_scored(links) == 1001
    clusters = gold_clusters(links, cutoff=1001)
    assert clusters == [frozenset({1001, 1002}), frozenset({1003, 1004})]


def test_parse_raw_wraps_midnight_and_reads_system_and_action_lines() -> None:
    lines = [
        "[23:59] <alice> late",
        "=== bob is now known as bobby",
        "[00:01] <carol> alice: early",
        "[00:02]  * dave waves",
    ]
    messages = parse_raw(lines, date(2020, 1, 1))
    assert [m.speaker for m in messages] == ["alice", "bob", "carol", "dave"]
    assert messages[1].is_system and messages[1].speaker_names == ("bob", "bobby")
    assert messages[1].time == messages[0].time
    assert (messages[2].time - messages[0].time).total_seconds() == 120
    assert messages[2].text == "alice: early"


def test_floor_heuristic_and_out_format_on_fixture() -> None:
    chats = load_chats(Path(__file__).resolve().parents[2] / "fixtures" / "irc")
    report, predictions = evaluate(chats, FloorHeuristic)
    assert report["n_messages"] == 8 + 3
    text = format_clusters(predictions)
    lines = sorted(
        int(x) for row in text.splitlines() if row.startswith("2020-01-02") for x in row.split(":")[1].split()
    )
    assert lines == [1, 2, 3]


@pytest.mark.skipif(not (DEV / "dev").is_dir(), reason="../shared/data/irc_disentanglement/dev is absent")
def test_gold_reading_matches_the_precomputed_clusters() -> None:
    expected: dict[str, set[frozenset[int]]] = {}
    for row in (DEV / "gold.dev.clusters.txt").read_text().splitlines():
        stem, rest = row.split(":")
        expected.setdefault(stem, set()).add(frozenset(int(x) for x in rest.split()))
    chats = load_chats(DEV / "dev")
    assert {c.stem: set(c.gold) for c in chats} == expected
    assert {c.scored_from for c in chats} == {1000}


@pytest.mark.parametrize("trouble", ["missing folder", "bad link", "not utf-8"])
def test_bad_data_raises_the_shared_data_error_of_every_eval(tmp_path: Path, trouble: str) -> None:
    """The disentangle eval had a DataError class of its own, apart from the one the other evals share
    (bot/evals/data_files.py): code catching that one missed the disentangle eval's errors."""
    (tmp_path / "chat.raw.txt").write_text("[03:00] <a> hi\n[03:01] <b> yo\n", encoding="utf-8")
    annotation = {"missing folder": b"", "bad link": b"1 x -\n", "not utf-8": b"1 0 -\xff\n"}[trouble]
    (tmp_path / "chat.annotation.txt").write_bytes(annotation)
    folder = tmp_path / "nope" if trouble == "missing folder" else tmp_path
    with pytest.raises(DataError) as caught:
        load_chats(folder)
    if trouble == "not utf-8":
        assert str(caught.value) == f"cannot read {tmp_path / 'chat.annotation.txt'}: it is not UTF-8 text"
