"""Without Chromium the browser tests skip, saying why, except under CI, where they fail."""

from __future__ import annotations

import shutil

import pytest

from tests.browser import chromium_executable


@pytest.fixture
def no_chromium(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    return monkeypatch


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_without_chromium_the_browser_tests_skip_saying_how_to_install_it(
    no_chromium: pytest.MonkeyPatch, ci: str | None
) -> None:
    if ci is None:
        no_chromium.delenv("CI", raising=False)
    else:
        no_chromium.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match=r"apt-get install chromium"):
        chromium_executable()


@pytest.mark.parametrize("ci", ["true", "1", "yes"])
def test_under_ci_a_missing_chromium_fails_the_browser_tests(
    no_chromium: pytest.MonkeyPatch, ci: str
) -> None:
    no_chromium.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match=r"CI is set"):
        chromium_executable()


def test_the_chromium_found_is_the_one_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: f"/opt/bin/{name}")
    assert chromium_executable() == "/opt/bin/chromium"
