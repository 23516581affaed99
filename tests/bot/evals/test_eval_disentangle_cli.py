"""`qunyi eval disentangle` on a tiny fixture, on bad input, and on the real dev data if present."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli.main import cli

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "irc"
DEV = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "irc_disentanglement" / "dev"
KEYS = {"vi", "one_to_one", "exact_f1", "n_messages", "seconds", "per_file"}


def test_fixture_json_and_out_file(tmp_path: Path) -> None:
    out = tmp_path / "pred.txt"
    result = CliRunner().invoke(
        cli, ["eval", "disentangle", "--data", str(FIXTURE), "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert KEYS <= set(report)
    assert report["n_messages"] == 11
    assert set(report["per_file"]) == {"2020-01-01_00", "2020-01-02_00"}
    # The fixture's threads are all addressed by name: the model must recover them exactly.
    assert report["exact_f1"] == pytest.approx(100.0)
    assert report["vi"] == pytest.approx(100.0)
    rows = out.read_text().splitlines()
    assert "2020-01-01_00:3 4 7 8" in rows
    assert "2020-01-01_00:5 6 10" in rows


def test_readable_summary() -> None:
    result = CliRunner().invoke(cli, ["eval", "disentangle", "--data", str(FIXTURE)])
    assert result.exit_code == 0
    assert "one-to-one" in result.output and "2020-01-02_00" in result.output


@pytest.mark.parametrize("make", ["missing", "empty", "none"])
def test_bad_data_dir_is_a_clear_usage_error(tmp_path: Path, make: str) -> None:
    args = ["eval", "disentangle", "--json"]
    if make == "missing":
        args += ["--data", str(tmp_path / "nope")]
    elif make == "empty":
        args += ["--data", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert "data" in result.output.lower()


@pytest.mark.parametrize(
    ("stem", "annotation", "said"),
    [
        ("chat", b"-1 0 -\n", "annotation line 1"),
        ("chat", b"1 0 -\xff\n", "not UTF-8"),
    ],
)
def test_a_bad_annotation_is_a_clear_usage_error(
    tmp_path: Path, stem: str, annotation: bytes, said: str
) -> None:
    """Found by the third QA pass: an annotation file with a byte that is not UTF-8 ended in a
    traceback, and a negative line number was taken (Python counts it from the end)."""
    (tmp_path / f"{stem}.raw.txt").write_text("[03:00] <a> hi\n[03:01] <b> yo\n", encoding="utf-8")
    (tmp_path / f"{stem}.annotation.txt").write_bytes(annotation)
    result = CliRunner().invoke(cli, ["eval", "disentangle", "--data", str(tmp_path), "--json"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert said in result.output and f"{stem}.annotation.txt" in result.output


def test_a_file_named_for_no_real_day_is_read(tmp_path: Path) -> None:
    """Found by the third QA pass: a file name starting like a date that is none (2004-13-45) crashed
    with a ValueError; its messages now get the day a name that is no date gets."""
    (tmp_path / "2004-13-45_03.raw.txt").write_text("[03:00] <a> hi\n[03:01] <b> a: yo\n", "utf-8")
    (tmp_path / "2004-13-45_03.annotation.txt").write_text("0 0 -\n1 0 -\n", "utf-8")
    result = CliRunner().invoke(cli, ["eval", "disentangle", "--data", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.output)["per_file"]) == {"2004-13-45_03"}


@pytest.mark.skipif(not DEV.is_dir(), reason="../shared/data/irc_disentanglement/dev is absent")
def test_real_dev_data_subset(tmp_path: Path) -> None:
    # Two real files keep this test to a few seconds; the full run is `qunyi eval disentangle`.
    for raw in sorted(DEV.glob("*.raw.txt"))[:2]:
        stem = raw.name.removesuffix(".raw.txt")
        for suffix in (".raw.txt", ".annotation.txt"):
            (tmp_path / f"{stem}{suffix}").symlink_to(DEV / f"{stem}{suffix}")
    result = CliRunner().invoke(cli, ["eval", "disentangle", "--data", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert KEYS <= set(report)
    assert report["n_messages"] == 500
    assert 80 <= report["vi"] <= 100
    assert 60 <= report["one_to_one"] <= 100
    assert 5 <= report["exact_f1"] <= 100


def test_config_disentangle_section_drives_the_eval(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[topics.disentangle]\nnew_thread_bias = 20.0\n", encoding="utf-8")
    base = ["eval", "disentangle", "--data", str(FIXTURE), "--json"]
    default = json.loads(CliRunner().invoke(cli, base).output)
    biased = CliRunner().invoke(cli, [*base, "--config", str(config)])
    assert biased.exit_code == 0, biased.output
    report = json.loads(biased.output)
    assert report["n_predicted_conversations"] > default["n_predicted_conversations"]


def test_an_out_file_that_cannot_be_written_is_a_clear_error_after_the_report(tmp_path: Path) -> None:
    """Found by the fifth QA pass: `--out` in a folder that does not exist ended the evaluation with a
    FileNotFoundError traceback, and its report was never printed."""
    out = tmp_path / "没有 的目录" / "pred.txt"
    result = CliRunner().invoke(cli, ["eval", "disentangle", "--data", str(FIXTURE), "--out", str(out)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "one-to-one" in result.output
    assert f"cannot write {out}: No such file or directory" in result.output
    assert not out.parent.exists()
