"""A headless Chromium for the browser tests (the playground page, the admin console): Debian's
`chromium` driven by Playwright, one per test module. A conftest takes the fixture with
`from tests.browser import browser as browser`."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, async_playwright

CHROMIUM_FLAGS = [  # headless, and never reaching for the network on its own (this machine has none)
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_executable() -> str:
    """Debian's Chromium (`chromium` on PATH). Without it the browser tests skip, except under CI
    (`CI` set), where they fail: CI installs it, so it can never go green by skipping them."""
    found = shutil.which("chromium")
    if found is None:
        reason = "the browser tests need Debian's chromium on PATH (apt-get install chromium)"
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail(f"{reason}; CI is set, so they must run, not skip", pytrace=False)
        pytest.skip(reason)
    return found


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    """One headless Chromium per test module, on a fresh temporary profile that Playwright makes and
    removes (a test takes a fresh context of it, so no storage passes from one test to the next).
    Playwright's own browser downloads are never used."""
    executable = chromium_executable()
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            yield launched
        finally:
            await launched.close()
