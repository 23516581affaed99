import json
from pathlib import Path

from click.testing import CliRunner

from bot.cli.main import cli


def test_bench_reports_throughput_and_latency(tmp_path: Path) -> None:
    args = ["bench", "--messages", "120", "--chats", "2", "--json", "--data-dir", str(tmp_path / "b")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["messages"] == 120 and report["rows"]["messages"] >= 120
    assert report["messages_per_second"] > 0 and report["recall_ms_median"] >= 0
    assert (tmp_path / "b" / "bench.jsonl").is_file()
