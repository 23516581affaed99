import json
from pathlib import Path

from click.testing import CliRunner

from bot.bench import IMPORT_CATCH_UP_ROUNDS
from bot.cli.main import cli


def test_bench_reports_throughput_and_latency(tmp_path: Path) -> None:
    args = ["bench", "--messages", "120", "--chats", "2", "--json", "--data-dir", str(tmp_path / "b")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["messages"] == 120 and report["rows"]["messages"] >= 120
    assert report["messages_per_second"] > 0 and report["recall_ms_median"] >= 0
    assert (tmp_path / "b" / "bench.jsonl").is_file()
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 1 and "already holds a database" in again.output, "a rerun measures nothing"


def test_bench_counts_the_chats_it_made_and_refuses_an_unusable_data_dir(tmp_path: Path) -> None:
    args = ["bench", "--messages", "1", "--chats", "5", "--json", "--data-dir", str(tmp_path / "b")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["chats"] == report["rows"]["chats"] == 1
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    result = CliRunner().invoke(cli, ["bench", "--messages", "5", "--data-dir", str(tmp_path / "file" / "x")])
    assert result.exit_code == 1
    assert "Error: cannot use" in result.output and "Not a directory" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_bench_refuses_sizes_that_would_run_for_days(tmp_path: Path) -> None:
    for option, value in (("--messages", "1000001"), ("--messages", "1" + "0" * 23), ("--chats", "1001")):
        result = CliRunner().invoke(cli, ["bench", option, value, "--data-dir", str(tmp_path / "b")])
        assert result.exit_code == 2 and "is not in the range" in result.output, (option, result.output)
        assert not (tmp_path / "b").exists()


def test_bench_import_times_the_import_path_and_the_jobs_catch_up(tmp_path: Path) -> None:
    args = [
        "bench",
        "--import",
        "--messages",
        "150",
        "--chats",
        "2",
        "--json",
        "--data-dir",
        str(tmp_path / "b"),
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["messages"] == report["rows"]["messages"] == 150 and report["chats"] == 2
    assert report["import_seconds"] > 0 and report["messages_per_second"] > 0
    assert report["catch_up_seconds"] > 0 and "replay_seconds" not in report
    assert set(report["job_runs"].values()) == {IMPORT_CATCH_UP_ROUNDS}, (
        "every daemon ran its catch-up rounds"
    )
