from pathlib import Path

import pytest

from bot.app import recall_settings
from bot.config import ConfigError, load_settings


def test_the_bot_time_zone_reaches_recall_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[bot]\ntimezone = "Asia/Shanghai"\n', encoding="utf-8")
    assert recall_settings(load_settings(config, env={})).timezone == "Asia/Shanghai"
    assert load_settings(None, env={}).bot.timezone == "local"
    config.write_text('[bot]\ntimezone = "Mars/Base"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config.toml:2: bot\.timezone") as info:
        load_settings(config, env={})
    assert "unknown time zone" in str(info.value)
