"""`qunyi import` for each format writes through the batch path; importing twice adds nothing."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli.main import cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
CASES = [
    ("telegram", "telegram_result.json", []),
    ("discord", "discord_export.json", []),
    ("qq", "qq_history.json", []),
    ("qq", "qq_manager.txt", ["--chat-id", "123456"]),
    ("replay", "replay.jsonl", []),
]


@pytest.mark.parametrize(("fmt", "name", "extra"), CASES)
def test_import_twice_adds_nothing(tmp_path: Path, fmt: str, name: str, extra: list[str]) -> None:
    path = FIXTURES / name
    assert path.is_file(), f"fixture {path} missing"
    args = ["import", fmt, str(path), "--data-dir", str(tmp_path / "d"), "--no-progress", *extra]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    imported = int(first.output.split(" messages imported")[0].split()[-1])
    assert imported > 0
    second = CliRunner().invoke(cli, args)
    assert second.exit_code == 0, second.output
    assert "0 messages imported" in second.output
    assert f"{imported} already known" in second.output


def test_wrong_format_file_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "x.json"
    bogus.write_text('{"not": "an export"}', encoding="utf-8")
    result = CliRunner().invoke(cli, ["import", "discord", str(bogus), "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 1
    assert "not a DiscordChatExporter JSON export" in result.output
