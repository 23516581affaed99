import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli.main import cli
from bot.evals.locomo import evidence_ids, load_conversations, parse_session_time, score_ranking

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


def test_dev_split_loads_when_present() -> None:
    if not DEV.is_file():
        pytest.skip(f"LoCoMo dev split not found at {DEV} (read-only shared data, not in the repo)")
    conversations = load_conversations(DEV)
    assert len(conversations) == 5
    assert sum(len(c.questions) for c in conversations) == 999
