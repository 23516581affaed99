"""nonebot2 with Qunyi's plugin loaded, and a QQ account of it (tests.bot.hosts.nonebot.account).

nonebot's driver is global to the process: it is made, and the plugin loaded, once per test run; each
test starts and stops the driver's lifespan (Qunyi with it) on a data directory of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import nonebot
import pytest
from nonebot.adapters.onebot.v11 import Adapter
from nonebot.drivers import Driver

from tests.adapters.host import watch_feeds
from tests.bot.hosts.nonebot.account import QQ, Implementation


@pytest.fixture(scope="session")
def qunyi_module() -> ModuleType:
    """nonebot made (with the `~none` driver: no server, no network) and the plugin loaded."""
    nonebot.init(driver="~none")
    nonebot.get_driver().register_adapter(Adapter)
    plugin = nonebot.load_plugin("bot.hosts.nonebot")
    assert plugin is not None
    return plugin.module


@pytest.fixture
def driver(qunyi_module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Driver:
    """nonebot's driver, its config naming this test's data directory (`QUNYI_DATA_DIR` in `.env`)."""
    driver = nonebot.get_driver()
    monkeypatch.setattr(driver.config, "qunyi_data_dir", tmp_path / "data", raising=False)
    return driver


@pytest.fixture
async def qq(
    driver: Driver, qunyi_module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[QQ]:
    """The driver started (and Qunyi with it), the account connected; all stopped after the test."""
    account = QQ(driver, Implementation(driver), qunyi_module, tmp_path / "data")
    account.fed = watch_feeds(monkeypatch)
    await account.start()
    try:
        yield account
    finally:
        await account.stop()
