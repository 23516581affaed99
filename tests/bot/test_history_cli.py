"""`qunyi topics` and `qunyi forget` after a replay with small topic settings."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli.main import cli
from bot.config import ConfigError
from bot.config.loader import parse_settings
from bot.history_setup import forget_policy
from memory.forgetting import MAIBOT_STAGES

CONFIG = """
[topics]
batch_size = 4
min_messages = 2
pack_after_idle_checks = 1
"""


def write_log(path: Path) -> Path:
    texts = ["周末去九溪爬山吧", "九溪十八涧不累", "龙井村吃农家菜", "满觉陇下山喝茶"]
    texts += ["Tom 女朋友生日送什么", "拍立得 薄荷绿", "再配一个手工相册", "预算一千左右"]
    lines = [
        json.dumps(
            {
                "chat": "g1",
                "message_id": f"m{i}",
                "sender_id": f"u{i % 3}",
                "sender_name": f"n{i % 3}",
                "time": f"2026-03-02T{10 + i:02d}:00:00+08:00",
                "text": text,
            },
            ensure_ascii=False,
        )
        for i, text in enumerate(texts, start=1)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_topics_and_forget_commands(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(CONFIG, encoding="utf-8")
    runner = CliRunner()
    common = ["--config", str(config), "--data-dir", str(tmp_path / "d")]
    replayed = runner.invoke(
        cli, ["replay", str(write_log(tmp_path / "log.jsonl")), "--no-progress", *common]
    )
    assert replayed.exit_code == 0, replayed.output
    assert "Topics" in replayed.output
    shown = runner.invoke(cli, ["topics", "--chat", "replay:g1", "--json", *common])
    assert shown.exit_code == 0, shown.output
    topics = json.loads(shown.output)
    assert topics and {t["state"] for t in topics} <= {"history", "cache"}
    assert all(t["start"] <= t["end"] for t in topics)
    assert min(t["start"] for t in topics) == "2026-03-02T11:00:00+08:00"
    # An offline summary no longer lists who took part: the line does, after it.
    lines = runner.invoke(cli, ["topics", "--chat", "replay:g1", *common]).output
    packed = [t for t in topics if t["state"] == "history"]
    assert packed and all(f"{', '.join(t['participants'])}; {t['messages']} msgs" in lines for t in packed)
    dry = runner.invoke(cli, ["forget", "--dry-run", *common])
    assert dry.exit_code == 0, dry.output
    log = runner.invoke(cli, ["forget", "--log", "--chat", "replay:g1", *common])
    assert log.exit_code == 0 and ("stage" in log.output or "nothing forgotten" in log.output)
    missing = runner.invoke(cli, ["topics", "--chat", "nope", *common])
    assert missing.exit_code == 1 and "no chat" in missing.output


def test_forgetting_config_needs_one_share_per_age() -> None:
    with pytest.raises(ConfigError, match="one value per stage"):
        parse_settings("[forgetting]\nstage_ages_minutes = [30.0]\n", "c.toml", env={})
    settings = parse_settings("[forgetting]\nsmall_cohort = 'wait'\nmin_cohort = 9\n", "c.toml", env={})
    policy, scope = forget_policy(settings)
    assert policy.stages == MAIBOT_STAGES and (policy.small_cohort, policy.min_cohort, scope) == (
        "wait",
        9,
        "global",
    )


@pytest.mark.parametrize("age", ["nan", "inf", "1e15", "-1.0"])
def test_a_forgetting_age_no_clock_can_count_is_a_config_error_naming_it(age: str) -> None:
    """NaN, infinite and huge ages passed validation and then broke every forgetting pass (and
    `qunyi forget`) with a traceback when turned into a timedelta."""
    text = f"[forgetting]\nstage_ages_minutes = [30.0, {age}]\nstage_shares = [0.1, 0.1]\n"
    with pytest.raises(ConfigError, match=r"c\.toml:2: forgetting\.stage_ages_minutes\.1: "):
        parse_settings(text, "c.toml", env={})
    year = "[forgetting]\nstage_ages_minutes = [525600.0]\nstage_shares = [0.1]\n"
    policy, _scope = forget_policy(parse_settings(year, "c.toml", env={}))
    assert policy.stages[0].min_age == timedelta(days=365)


def test_forgetting_names_chats_by_their_keys(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    forgetting = "[forgetting]\nenabled = false\nstage_ages_minutes = [0, 0, 0, 0]\nsmall_cohort = 'round_up'"
    config.write_text(f"{CONFIG}\n{forgetting}\n", encoding="utf-8")
    runner = CliRunner()
    common = ["--config", str(config), "--data-dir", str(tmp_path / "d")]
    replayed = runner.invoke(
        cli, ["replay", str(write_log(tmp_path / "log.jsonl")), "--no-progress", *common]
    )
    assert replayed.exit_code == 0, replayed.output
    forgot = runner.invoke(cli, ["forget", *common])
    assert forgot.exit_code == 0, forgot.output
    assert "deleted #" in forgot.output and "(replay:g1)" in forgot.output and "(chat " not in forgot.output
    log = runner.invoke(cli, ["forget", "--log", *common])
    assert log.exit_code == 0, log.output
    assert "(replay:g1)" in log.output and "(chat " not in log.output


def test_topics_of_a_chat_whose_topics_were_all_forgotten_says_so(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    forgetting = (
        "[forgetting]\nenabled = false\nstage_ages_minutes = [0, 0, 0, 0]\n"
        "stage_shares = [0.5, 0.5, 0.5, 0.5]\nsmall_cohort = 'round_up'"
    )
    config.write_text(f"{CONFIG}\n{forgetting}\n", encoding="utf-8")
    log = write_log(tmp_path / "log.jsonl")
    runner = CliRunner()
    common = ["--config", str(config), "--data-dir", str(tmp_path / "d")]
    replayed = runner.invoke(cli, ["replay", str(log), "--no-progress", "--settle-minutes", "1500", *common])
    assert replayed.exit_code == 0, replayed.output
    before = runner.invoke(cli, ["topics", "--chat", "replay:g1", *common])
    assert before.exit_code == 0 and "no topics" not in before.output, before.output
    forgot = runner.invoke(cli, ["forget", *common])
    assert forgot.exit_code == 0 and "deleted #" in forgot.output, forgot.output
    after = runner.invoke(cli, ["topics", "--chat", "replay:g1", *common])
    assert after.exit_code == 0, after.output
    deleted = forgot.output.count("deleted #")
    assert after.output.strip() == (
        f"no topics now: forgetting deleted {deleted} (qunyi forget --log --chat replay:g1)"
    )
