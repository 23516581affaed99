"""Which adapters `qunyi run` builds from `[adapters]`."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from adapters.console import ConsoleAdapter
from bot.adapters_factory import build_adapters
from bot.app import build_app
from bot.config import ConfigStore
from bot.config.loader import parse_settings
from memory.clock import ManualClock
from tests.conftest import T0


@pytest.mark.parametrize("platform", ["telegram", "discord"])
async def test_a_platform_table_left_out_of_enabled_is_not_started_and_says_so(
    platform: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """config.toml said the platform was "off unless this table exists": an admin who set the table
    and its token got the console only, and no word of why the platform never connected."""
    settings = parse_settings(f'[adapters.{platform}]\ntoken = "123456:abc"\n', "cfg.toml", env={})
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    try:
        with caplog.at_level(logging.WARNING, logger="bot.adapters_factory"):
            adapters = build_adapters(app)
    finally:
        await app.close()
    assert [type(a) for a in adapters] == [ConsoleAdapter]
    [warning] = [r.getMessage() for r in caplog.records if r.name == "bot.adapters_factory"]
    assert warning.startswith(f"[adapters.{platform}] is set, but '{platform}' is not in [adapters] enabled")


async def test_no_warning_when_no_platform_table_is_set(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = await build_app(
        ConfigStore(parse_settings("", "cfg.toml", env={}), None), tmp_path / "d", ManualClock(T0)
    )
    try:
        with caplog.at_level(logging.WARNING, logger="bot.adapters_factory"):
            assert [type(a) for a in build_adapters(app)] == [ConsoleAdapter]
    finally:
        await app.close()
    assert not [r for r in caplog.records if r.name == "bot.adapters_factory"]
