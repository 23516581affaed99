import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli.main import cli
from bot.evals.jargon import (
    Cadence,
    InMemoryDictionary,
    StreamMessage,
    build_stream,
    gold_key,
    load_filler,
    load_terms,
    replay,
    score,
)
from memory.jargon.types import Candidate, MinerMessage

FIXTURES = Path(__file__).parents[2] / "fixtures" / "jargon"
DATA = Path(__file__).parents[3].parent / "shared" / "data"
KEYS = {"precision", "recall", "f1", "n_terms", "n_mined", "seconds", "false_positives", "misses"}


def run_cli(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["eval", "jargon", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_cli_on_fixture() -> None:
    fixture = ["--terms", str(FIXTURES / "terms.json"), "--filler", str(FIXTURES / "filler.json")]
    out = run_cli(*fixture, "--seed", "1")
    assert KEYS <= out.keys()
    assert out["n_terms"] == 4
    assert out["n_term_messages"] == 32
    assert out["recall"] >= 0.75 and out["precision"] >= 0.75
    assert 0 <= out["f1"] <= 1 and out["seconds"] >= 0


def test_cli_rejects_bad_terms_file(tmp_path: Path) -> None:
    bad = tmp_path / "terms.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["eval", "jargon", "--terms", str(bad), "--filler", str(FIXTURES / "filler.json")]
    )
    assert result.exit_code != 0
    assert "cannot read the evaluation data" in result.output


def test_one_example_sentence_is_one_example(tmp_path: Path) -> None:
    """Found by the third QA pass: `"example": "a sentence"` (one sentence, not a list) made every
    character of it an example of the term."""
    terms = tmp_path / "terms.json"
    terms.write_text(json.dumps({"yyds": {"example": "这个真的yyds"}}, ensure_ascii=False), "utf-8")
    assert load_terms(terms) == {"yyds": ["这个真的yyds"]}


@pytest.mark.parametrize(
    ("filler", "said"),
    [
        ({"train": ["你好 啊", "吃了 吗"]}, "dialogue 1 of split 'train'"),
        ({"train": {"a": ["你好"]}}, "split 'train'"),
        ([["你好"], 5], "dialogue 2 of split 0"),
    ],
)
def test_filler_not_made_of_dialogues_is_refused(tmp_path: Path, filler: object, said: str) -> None:
    """Found by the third QA pass: a split of strings (or a dict) was read character by character
    (each character one turn), and an error said only "'int' object is not iterable"."""
    path = tmp_path / "filler.json"
    path.write_text(json.dumps(filler, ensure_ascii=False), "utf-8")
    result = CliRunner().invoke(
        cli, ["eval", "jargon", "--terms", str(FIXTURES / "terms.json"), "--filler", str(path)]
    )
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "filler.json" in result.output and said in result.output


def test_stream_keeps_every_example_and_dialogue_order() -> None:
    terms = {"甲乙丙": ["一甲乙丙", "二甲乙丙"], "xswl": ["xswl"]}
    filler = load_filler(FIXTURES / "filler.json")
    stream = build_stream(terms, filler, seed=3)
    assert sorted(m.message.text for m in stream if m.term) == ["xswl", "一甲乙丙", "二甲乙丙"]
    assert len(stream) == 3 + sum(len(d) for d in filler)
    assert all(a.at < b.at for a, b in itertools.pairwise(stream))
    assert stream == build_stream(terms, filler, seed=3)
    first = filler[0]
    texts = [m.message.text for m in stream]
    start = texts.index(first[0])
    assert texts[start : start + len(first)] == first


class Recorder:
    def __init__(self) -> None:
        self.windows: list[list[str]] = []

    def run(self, window: list[MinerMessage]) -> list[Candidate]:
        self.windows.append([m.key for m in window])
        return [Candidate("YYDS", (window[0].key,), 1.0)]


def test_cadence_needs_cooldown_and_new_messages() -> None:
    stream = [StreamMessage(MinerMessage(f"k{i}", "x", "a"), at=i * 5.0) for i in range(40)]
    miner = Recorder()
    result = replay(stream, miner, Cadence(cooldown=20.0, min_new=10))
    assert [len(w) for w in miner.windows] == [10, 10, 10, 10]
    assert result.runs == 4
    entry = result.dictionary.entries["yyds"]
    assert entry.count == 4 and entry.content == "YYDS"
    slow = Recorder()
    replay(stream, slow, Cadence(cooldown=100.0, min_new=10))
    # runs at k9 (t=45), then k29 (t=145, the cooldown), then what is pending at the end
    assert [len(w) for w in slow.windows] == [10, 20, 10]


def test_dictionary_counts_distinct_evidence() -> None:
    dictionary = InMemoryDictionary()
    dictionary.upsert([Candidate("ＹＹＤＳ", ("a", "b"), 1.0), Candidate("yyds ", ("b",), 1.0)])
    assert dictionary.entries["yyds"].count == 2
    assert set(dictionary.mined(2)) == {"yyds"} and dictionary.mined(3) == {}


def test_score_compares_normalised_terms() -> None:
    assert gold_key(" ＹＹＤＳ ") == "yyds"
    assert score(["YYDS", "foo"], ["yyds", "bar"]) == {"precision": 0.5, "recall": 0.5, "f1": 0.5}
    assert score([], ["a"]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


@pytest.mark.skipif(
    not (DATA / "slang_zh" / "buzzwords_dev.json").exists() or not (DATA / "lccc" / "toy_data.json").exists(),
    reason="../shared/data (slang_zh, lccc development splits) is not present beside the repository",
)
def test_cli_on_shared_dev_data_sample() -> None:
    out = run_cli(
        "--terms", str(DATA / "slang_zh" / "buzzwords_dev.json"),
        "--filler", str(DATA / "lccc" / "toy_data.json"),
        "--max-terms", "40", "--max-filler", "300",
    )  # fmt: skip
    assert KEYS <= out.keys()
    assert out["n_terms"] == 40
    assert out["n_messages"] > 1000
    for key in ("precision", "recall", "f1"):
        assert 0.0 <= out[key] <= 1.0
    assert out["f1"] >= 0.3  # a sanity floor far below the full-dev number, not a tuned target


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ('{"yyds": 5}', "term 'yyds' should be an object with an 'example' list, not int"),
        ('{"yyds": ["这个真的yyds"]}', "term 'yyds' should be an object with an 'example' list, not list"),
        (b"\xbe\xef\x00 binary", "is not UTF-8 text"),
        ("", "is not valid JSON"),
    ],
)
def test_a_terms_file_that_is_no_dictionary_of_terms_is_named_with_what_is_wrong(
    tmp_path: Path, content: str | bytes, said: str
) -> None:
    """Found by the fifth QA pass: a term whose entry was not an object said only "'int' object has no
    attribute 'get'", and a file that was not UTF-8 or empty did not say which file."""
    terms = tmp_path / "词 表.json"
    if isinstance(content, bytes):
        terms.write_bytes(content)
    else:
        terms.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["eval", "jargon", "--terms", str(terms), "--filler", str(FIXTURES / "filler.json")]
    )
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{terms}" in result.output and said in result.output
