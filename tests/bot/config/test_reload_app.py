"""A running app and config reloads: what follows the new file, and what says it needs a restart."""

from __future__ import annotations

import io
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from adapters.console import ConsoleAdapter
from bot.adapters_factory import build_adapters
from bot.app import App, build_app
from bot.config import ConfigStore
from bot.reload_answer import read_answer, reload_and_answer
from bot.reply.pipeline import Outcome
from memory.clock import ManualClock
from memory.persons.admin import PersonAdminError
from memory.types import ChatMessage
from tests.conftest import T0, make_message


async def test_note_hints_follow_a_reload(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[notes]\nhints = 5\n", encoding="utf-8")
    store = ConfigStore.load(config)
    app = await build_app(store, tmp_path / "data", ManualClock(T0), watch_config=False)
    try:
        await app.memory.record(make_message(1, text="周六去西湖边爬山"))
        assert app.memory.notes is not None
        await app.memory.notes.for_chat("test:g1").set("爬山计划", "周六 西湖")
        stored = (await app.memory.recent(1, 1))[-1]

        async def sections() -> set[str]:
            context = await app.memory.context_for_reply(1, stored)
            return {section.name for section in context.sections}

        before = await sections()
        config.write_text("[notes]\nhints = 0\n", encoding="utf-8")
        assert store.reload()
        after = await sections()
    finally:
        await app.close()
    assert "notes" in before
    assert "notes" not in after


async def test_a_reload_changing_start_only_settings_says_a_restart_is_needed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[reply]\nprobability = 0.0\n", encoding="utf-8")
    store = ConfigStore.load(config)
    app = await build_app(store, tmp_path / "data", ManualClock(T0), watch_config=False)
    try:
        with caplog.at_level(logging.WARNING, logger="bot.app"):
            config.write_text("[reply]\nprobability = 0.5\n", encoding="utf-8")
            assert store.reload()
            assert not [r for r in caplog.records if "restart" in r.getMessage()]
            config.write_text(
                '[storage]\ndata_dir = "elsewhere"\n[adapters]\nenabled = ["onebot_v11"]\n'
                '[recall]\nembedder = "local"\n',
                encoding="utf-8",
            )
            assert store.reload()
    finally:
        await app.close()
    warnings = [r.getMessage() for r in caplog.records if "restart" in r.getMessage()]
    assert warnings == [
        "config reloaded, but storage, adapters, recall.embedder take effect only after a restart"
    ]


@asynccontextmanager
async def running(tmp_path: Path, text: str) -> AsyncIterator[tuple[App, Path]]:
    """An app over `config.toml` holding `text` (not watched: reloads are the test's), and that file."""
    config = tmp_path / "config.toml"
    config.write_text(text, encoding="utf-8")
    app = await build_app(ConfigStore.load(config), tmp_path / "data", ManualClock(T0), watch_config=False)
    try:
        yield app, config
    finally:
        await app.close()


async def test_the_answer_to_a_signalled_reload_names_what_waits_for_a_restart(tmp_path: Path) -> None:
    async with running(tmp_path, "") as (app, config):
        config.write_text('[recall]\nembedder = "local"\n', encoding="utf-8")
        taken = reload_and_answer(app)
        config.write_text("[recall]\nembedder = 3\n", encoding="utf-8")
        refused = reload_and_answer(app)
        kept = app.settings.recall.embedder
    assert read_answer(tmp_path / "data") == refused
    assert taken.ok and taken.pid == os.getpid()
    assert taken.message == f"reloaded {config}; recall.embedder take effect only after a restart"
    assert not refused.ok and "recall.embedder" in refused.message
    assert kept == "local"


async def test_an_answer_that_cannot_be_written_leaves_no_partial_file(tmp_path: Path) -> None:
    async with running(tmp_path, "") as (app, _config):
        (tmp_path / "data" / "reload.json").mkdir()  # cannot be replaced by a file
        assert reload_and_answer(app).ok, "the reload itself still happens"
    assert sorted(p.name for p in (tmp_path / "data").iterdir() if "reload" in p.name) == ["reload.json"]


async def test_config_watching_turned_off_at_start_can_be_turned_on_by_a_reload(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[scheduler]\nconfig_watch_seconds = 0\n", encoding="utf-8")
    store = ConfigStore.load(config)
    app = await build_app(store, tmp_path / "data", ManualClock(T0), watch_config=True)

    def write(watch: int, probability: float, mtime: int) -> None:
        config.write_text(
            f"[scheduler]\nconfig_watch_seconds = {watch}\n[reply]\nprobability = {probability}\n",
            encoding="utf-8",
        )
        os.utime(config, (mtime, mtime))

    try:
        write(0, 0.5, 1)
        await app.runner.run_job("config_watch")
        assert store.current.reply.probability == 0.0, "watching is off: the change waits"
        write(5, 0.5, 2)
        assert store.reload()  # SIGHUP / `qunyi reload`
        write(5, 0.75, 3)
        await app.runner.run_job("config_watch")
        assert store.current.reply.probability == 0.75, "watching is on now"
    finally:
        await app.close()


async def test_a_start_only_setting_put_back_needs_no_restart_and_a_pending_one_is_still_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The restart warning compares the file with what the bot started with, not with the file of
    the previous reload: putting `[adapters]` back as it was is no change to the running bot."""
    config = tmp_path / "config.toml"
    console_only = '[adapters]\nenabled = ["console"]\n'
    config.write_text(console_only, encoding="utf-8")
    store = ConfigStore.load(config)
    app = await build_app(store, tmp_path / "data", ManualClock(T0), watch_config=False)

    def reload(text: str) -> list[str]:
        caplog.clear()
        config.write_text(text, encoding="utf-8")
        assert store.reload()
        return [r.getMessage() for r in caplog.records if "restart" in r.getMessage()]

    try:
        with caplog.at_level(logging.WARNING, logger="bot.app"):
            with_onebot = '[adapters]\nenabled = ["console", "onebot_v11"]\n'
            assert reload(with_onebot) == ["config reloaded, but adapters take effect only after a restart"]
            assert reload(with_onebot + "[reply]\nprobability = 0.5\n") == [
                "config reloaded, but adapters take effect only after a restart"
            ], "still not in force"
            assert reload(console_only) == [], "the adapters running are those the file names again"
    finally:
        await app.close()


async def test_the_console_answers_to_and_signs_with_a_reloaded_bot_name(tmp_path: Path) -> None:
    """`[bot] name` follows a reload (no restart is asked for): the console kept the start's name, so
    `@新名` no longer addressed the bot while `@旧名` still did, and replies were signed with the old one."""
    config = tmp_path / "config.toml"
    config.write_text('[bot]\nname = "群忆"\nself_id = "bot"\n', encoding="utf-8")
    store = ConfigStore.load(config)
    app = await build_app(store, tmp_path / "data", ManualClock(T0), watch_config=False)
    try:
        [console] = build_adapters(app)
        assert isinstance(console, ConsoleAdapter)
        console.output, console.source = io.StringIO(), io.StringIO("")
        outcomes: list[Outcome] = []

        async def handle(message: ChatMessage) -> None:
            outcomes.append(await app.pipeline.handle(message, console.send_text))

        await console.start(handle)
        config.write_text('[bot]\nname = "小忆"\nself_id = "bot2"\n', encoding="utf-8")
        assert store.reload()
        await console.feed_line("@小忆 /who me")
        await console.stop()
    finally:
        await app.close()
    assert [outcome.reason for outcome in outcomes] == ["command"]
    assert "小忆: 【me】" in console.output.getvalue()


async def test_renaming_a_person_follows_a_reloaded_name_length_limit(tmp_path: Path) -> None:
    """`[persons] person_name_max_chars` follows a reload for the admin rename too (the web console's
    reload button, a long-running process): it kept the limit of the start."""
    config = tmp_path / "config.toml"
    config.write_text("[persons]\nperson_name_max_chars = 4\n", encoding="utf-8")
    store = ConfigStore.load(config)
    app = await build_app(store, tmp_path / "data", ManualClock(T0), watch_config=False)
    try:
        assert app.persons is not None
        recorded = await app.memory.record(make_message(1, text="大家好"))
        long_name = "一个很长的名字"  # 7 characters
        with pytest.raises(PersonAdminError, match="7 characters, over the limit of 4"):
            await app.persons.admin.rename(recorded.chat_id, recorded.person_id, long_name, now=T0)
        config.write_text("[persons]\nperson_name_max_chars = 8\n", encoding="utf-8")
        assert store.reload()
        chosen = await app.persons.admin.rename(recorded.chat_id, recorded.person_id, long_name, now=T0)
    finally:
        await app.close()
    assert chosen == long_name
