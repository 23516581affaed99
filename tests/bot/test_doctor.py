import socket
from pathlib import Path

from click.testing import CliRunner

from bot.cli.main import cli


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_doctor_on_the_offline_default(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["doctor", "--data-dir", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "[llm] enabled = false" in result.output
    assert "tool definitions" in result.output and "limit 500" in result.output


def test_doctor_names_an_unreachable_endpoint_and_fails(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[llm]\nenabled = true\nbase_url = "http://127.0.0.1:{free_port()}/v1"\nmodel = "m"\n',
        encoding="utf-8",
    )
    args = ["doctor", "--config", str(config), "--data-dir", str(tmp_path / "d")]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "250"})
    assert result.exit_code == 1
    assert "unreachable" in result.output and "llm:reply" in result.output
