import asyncio
import json
import logging
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli.main import cli
from bot.evals.locomo import (
    DataError,
    evaluate,
    evidence_ids,
    load_conversations,
    parse_session_time,
    score_ranking,
)
from memory.recall import RecallSettings

DEV = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "locomo" / "locomo_dev.json"

TINY = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! I adopted a puppy named Biscuit."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! What breed is Biscuit?"},
                {
                    "speaker": "Ana",
                    "dia_id": "D1:3",
                    "text": "A corgi. Look!",
                    "blip_caption": "a photo of a corgi",
                },
            ],
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "I started learning the violin last week."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Nice, I usually play guitar on Sundays."},
                {"speaker": "Ben", "dia_id": "D2:3", "text": "We should jam sometime."},
            ],
        },
        "qa": [
            {
                "question": "What is the name of Ana's puppy?",
                "answer": "Biscuit",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "What instrument is Ben learning?",
                "answer": "violin",
                "evidence": ["D2:1"],
                "category": 4,
            },
            {
                "question": "What breed is the puppy?",
                "answer": "corgi",
                "evidence": ["D1:3; D1:2"],
                "category": 1,
            },
            {
                "question": "When did Ben start the violin?",
                "answer": "June 2023",
                "evidence": ["D2:1"],
                "category": 2,
            },
            {
                "question": "What did Ana say about cats?",
                "adversarial_answer": "x",
                "evidence": [],
                "category": 5,
            },
        ],
    }
]


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return path


def test_parsing_dates_evidence_and_captions(tiny: Path) -> None:
    (conv,) = load_conversations(tiny)
    assert parse_session_time("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"
    assert evidence_ids(["D8:6; D9:17", "D1:2"]) == ("D8:6", "D9:17", "D1:2")
    assert conv.turns[2].text == "A corgi. Look! [image: a photo of a corgi]"
    assert conv.turns[3].time.month == 6


def test_scoring_a_ranking() -> None:
    ranking = ["D1:1", "D2:4", "D3:1", "D1:2"]
    scores = score_ranking(ranking, ["D1:2", "D5:1"])
    assert scores["turn_recall_all@5"] == 0.0 and scores["turn_recall_any@5"] == 1.0
    assert scores["session_frac@10"] == 0.5


def test_cli_prints_the_json_report(tiny: Path) -> None:
    result = CliRunner().invoke(cli, ["eval", "locomo", "--data", str(tiny), "--json", "--baseline"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    for key in (
        "turn_recall_all@5",
        "turn_recall_all@10",
        "turn_recall_any@10",
        "session_frac@10",
        "seconds",
    ):
        assert 0.0 <= report[key] <= (1.0 if key != "seconds" else 600)
    assert report["n_questions"] == 4, "the question without evidence is left out"
    assert report["embedder"] == "none"
    assert set(report["per_category"]) == {"1", "2", "4"}
    assert report["per_category"]["4"]["turn_recall_all@10"] == 1.0, (
        "six turns: every evidence is in the top 10"
    )
    assert "baseline_bm25" in report
    (conversation,) = report["per_conversation"].values()
    assert conversation["n_questions"] == 4
    assert conversation["session_frac@10"] == report["session_frac@10"]


def test_cli_rejects_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    result = CliRunner().invoke(cli, ["eval", "locomo", "--data", str(bad)])
    assert result.exit_code != 0 and "list of conversations" in result.output


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    """Found by the fifth QA pass: a binary --data file said only "'utf-8' codec can't decode byte
    0xbe…", not which file."""
    bad = tmp_path / "对话 数据.json"
    bad.write_bytes(b"\xbe\xef\x00 binary")
    with pytest.raises(DataError, match="it is not UTF-8 text"):
        load_conversations(bad)
    result = CliRunner().invoke(cli, ["eval", "locomo", "--data", str(bad)])
    assert result.exit_code == 2 and f"cannot read {bad}: it is not UTF-8 text" in result.output


def test_dev_split_loads_when_present() -> None:
    if not DEV.is_file():
        pytest.skip(f"LoCoMo dev split not found at {DEV} (read-only shared data, not in the repo)")
    conversations = load_conversations(DEV)
    assert len(conversations) == 5
    assert sum(len(c.questions) for c in conversations) == 999


def _write(tmp_path: Path, conversation: dict[str, object], qa: list[dict[str, object]]) -> Path:
    path = tmp_path / "hand.json"
    path.write_text(json.dumps([{"sample_id": "hand", "conversation": conversation, "qa": qa}]), "utf-8")
    return path


def _report(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["eval", "locomo", "--data", str(path), "--embedder", "none", "--json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output)
    return report


def test_odd_evidence_ids_are_read_and_ids_of_no_turn_dropped(tmp_path: Path) -> None:
    assert evidence_ids(["D:11:26", "D1: 3", "D", "D01:03", "D1:3"]) == ("D11:26", "D1:3")
    conversation = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "My puppy Biscuit chewed my slippers."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Biscuit is a corgi, right?"},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I bought a violin in Vienna."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "I repaint furniture with turquoise paint."},
        ],
    }
    qa = [
        {"question": "What did Biscuit chew?", "evidence": ["D1:1"], "category": 4},
        {"question": "What breed is Biscuit, a corgi?", "evidence": ["D1:2; D9:9"], "category": 1},
        {"question": "When was the party?", "evidence": ["D9:9"], "category": 2},
        {"question": "Where did Ben buy the violin?", "evidence": ["D2:1"], "category": 5},
        {"question": "What colour is the furniture paint?", "evidence": ["D:2:2"], "category": 3},
    ]
    (conv,) = load_conversations(_write(tmp_path, conversation, qa))
    assert [q.evidence for q in conv.questions] == [("D1:1",), ("D1:2",), (), ("D2:1",), ("D2:2",)]
    report = _report(_write(tmp_path, conversation, qa))
    # By hand: four turns, so every recalled evidence turn is in the top 5. The question whose only
    # id names no turn is not scored; 'D:11:26'-style ids count; category 5 only in session_frac.
    assert report["n_questions"] == 4 and report["n_turn_questions"] == 3
    for key in ("turn_recall_all@5", "turn_recall_all@10", "turn_recall_any@10", "session_frac@10"):
        assert report[key] == 1.0, key
    assert set(report["per_category"]) == {"1", "3", "4", "5"}
    assert report["per_category"]["5"] == {"n_questions": 1, "session_frac@10": 1.0}


def test_a_merged_duplicate_stands_for_its_turns() -> None:
    scores = score_ranking([("D1:1", "D3:2"), "D2:1"], ["D3:2"])
    assert scores["turn_recall_all@5"] == 1.0 and scores["session_frac@10"] == 1.0


def test_the_same_sentence_said_twice_is_found_for_either_turn(tmp_path: Path) -> None:
    said = "I signed up for pottery classes at the community center."
    conversation = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": said}],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": said}],
    }
    qa = [
        {"question": "Which classes did Ana sign up for?", "evidence": ["D1:1"], "category": 4},
        {"question": "Which classes did Ana sign up for?", "evidence": ["D2:1"], "category": 4},
    ]
    report = _report(_write(tmp_path, conversation, qa))
    assert report["turn_recall_all@5"] == 1.0, "recall merges the two; the merged hit is both turns"


def test_the_ranking_reaches_ten_sessions_past_a_hundred_messages(tmp_path: Path) -> None:
    conversation: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for n in range(1, 6):
        conversation[f"session_{n}_date_time"] = f"10:00 am on {n} May, 2023"
        conversation[f"session_{n}"] = [
            {"speaker": "Ana", "dia_id": f"D{n}:1", "text": f"Pottery lesson {n} was about glazes."}
        ]
    conversation["session_6_date_time"] = "10:00 am on 1 June, 2023"
    conversation["session_6"] = [
        {"speaker": "Ben", "dia_id": f"D6:{i}", "text": f"Pottery chat number {i} about my pottery wheel."}
        for i in range(1, 151)
    ]
    qa = [{"question": "What was pottery about?", "evidence": ["D1:1"], "category": 3}]
    report = _report(_write(tmp_path, conversation, qa))
    assert report["session_frac@10"] == 1.0, "six sessions in all: each is among the first ten"


def _session(turns: list[dict[str, object]], date: str = "1:56 pm on 8 May, 2023") -> dict[str, object]:
    return {"speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": date, "session_1": turns}


@pytest.mark.parametrize(
    ("turns", "date", "said"),
    [
        ([{"speaker": "Ana", "dia_id": "x", "text": "I went hiking"}], "1:56 pm on 8 May, 2023", "'x'"),
        ([{"speaker": "Ana", "dia_id": 3, "text": "I went hiking"}], "1:56 pm on 8 May, 2023", "3"),
        ([{"speaker": "", "dia_id": "D1:1", "text": "I went hiking"}], "1:56 pm on 8 May, 2023", "sender"),
        ([{"speaker": "Ana", "dia_id": "D1:1", "text": "I went hiking"}], "1:56 pm on 8 May, 0001", "range"),
    ],
)
def test_a_turn_that_cannot_be_a_message_is_a_clear_error(
    tmp_path: Path, turns: list[dict[str, object]], date: str, said: str
) -> None:
    """Found by the third QA pass: a dia_id that is no 'D<session>:<turn>' crashed the scoring with an
    AttributeError, and a turn id that is not a string or a date before 1970 crashed the recording with
    InvalidMessage, each with a traceback, after the earlier conversations had been evaluated."""
    qa = [{"question": "Where did Ana go hiking?", "evidence": ["D1:1"], "category": 4}]
    path = _write(tmp_path, _session(turns, date), qa)
    with pytest.raises(DataError, match=said):
        load_conversations(path)
    result = CliRunner().invoke(cli, ["eval", "locomo", "--data", str(path), "--embedder", "none"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "hand.json" in result.output and said in result.output


def test_two_conversations_sharing_a_sample_id_are_a_clear_error(tmp_path: Path) -> None:
    """`per_conversation` is keyed by sample_id: the second conversation's numbers replaced the first's."""
    turns = [{"speaker": "Ana", "dia_id": "D1:1", "text": "I went hiking on Mount Tai."}]
    qa = [{"question": "Where did Ana go hiking?", "evidence": ["D1:1"], "category": 4}]
    item = {"sample_id": "twin", "conversation": _session(turns), "qa": qa}
    path = tmp_path / "twins.json"
    path.write_text(json.dumps([item, {**item, "sample_id": "other"}, item]), "utf-8")
    with pytest.raises(DataError, match="conversations 0 and 2 share the sample_id 'twin'"):
        load_conversations(path)
    result = CliRunner().invoke(cli, ["eval", "locomo", "--data", str(path), "--embedder", "none"])
    assert result.exit_code == 2 and "Traceback" not in result.output and "'twin'" in result.output


def test_turn_ids_are_read_as_leniently_as_evidence_ids(tmp_path: Path) -> None:
    turns = [
        {"speaker": "Ana", "dia_id": "D01:01", "text": "I went hiking on Mount Tai."},
        {"speaker": "Ben", "dia_id": "D1: 2", "text": "Was the weather good?"},
    ]
    qa = [{"question": "Where did Ana go hiking?", "evidence": ["D1:1"], "category": 4}]
    (conv,) = load_conversations(_write(tmp_path, _session(turns), qa))
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2"]
    assert conv.questions[0].evidence == ("D1:1",)


def test_a_conversation_without_turns_scores_nothing(tmp_path: Path) -> None:
    """Found by the third QA pass: a conversation with no turns crashed on `max()` of no times."""
    qa = [{"question": "Where did Ana go hiking?", "evidence": ["D1:1"], "category": 4}]
    report = _report(_write(tmp_path, _session([]), qa))
    assert report["n_questions"] == 0 and report["per_conversation"]["hand"]["n_questions"] == 0


def test_an_embedder_that_fails_is_a_clear_error(tmp_path: Path) -> None:
    """Found by the third QA pass: `--embedder openai` pointed at an endpoint that refuses connections
    ended in an EmbedderUnavailable traceback."""
    with socket.socket() as closed:  # a loopback port nothing listens on once this is closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY), encoding="utf-8")
    args = ["eval", "locomo", "--data", str(path), "--embedder", "openai", "--model", "m"]
    result = CliRunner().invoke(cli, [*args, "--base-url", f"http://127.0.0.1:{port}/v1"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"127.0.0.1:{port}/v1/embeddings unreachable" in result.output


class SlowQuestionEmbedder:
    """A stand-in model slower on one question than a bot's question timeout allows."""

    model = "test-slow"
    dimension = 2

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) == 1:
            await asyncio.sleep(0.2)
        return [[float("puppy" in text.lower()) + 0.01, 1.0] for text in texts]


async def test_each_question_waits_for_its_vector(tiny: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Under load some questions' vectors came after the bot's timeout (`[recall]
    query_embed_timeout_seconds`), so the `local` numbers were partly lexical and varied with the
    machine's load."""
    settings = RecallSettings(query_embed_timeout_seconds=0.05)
    with caplog.at_level(logging.WARNING, logger="memory.recall.pipeline"):
        report = await evaluate(load_conversations(tiny), settings, SlowQuestionEmbedder())
    assert report["n_questions"] == 4
    assert not [r for r in caplog.records if "not embedded" in r.getMessage()]
