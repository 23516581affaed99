"""`qunyi notes …`: `--chat` names a chat the way the other commands do, and writes where the bot reads."""

from __future__ import annotations

import asyncio
from pathlib import Path

from click.testing import CliRunner, Result

from bot.cli.main import cli
from memory.notes import NoteScopes
from memory.service import MemoryService
from memory.storage import Database
from tests.conftest import make_message


def record_chat(data: Path) -> str:
    """Record one message of chat g1 on platform 'test'; return the key the bot files its notes under."""

    async def record() -> str:
        db = await Database.open(data)
        try:
            memory = MemoryService(db)
            await memory.record(make_message(1, chat="g1"))
            chat = await memory.find_chat("test:g1")
            assert chat is not None
            key = await memory.chat_key(chat.id)
            assert key is not None
            return key
        finally:
            await db.close()

    return asyncio.run(record())


def notes(data: Path, *args: str, stdin: bytes | str | None = None) -> Result:
    return CliRunner().invoke(cli, ["notes", *args, "--data-dir", str(data)], input=stdin)


def test_chat_is_resolved_to_the_key_the_bot_reads(tmp_path: Path) -> None:
    data = tmp_path / "d"
    key = record_chat(data)
    written = notes(data, "set", "爬山", "--chat", "g1", stdin="周六去九溪")
    assert written.exit_code == 0, written.output
    assert asyncio.run(NoteScopes(data / "notes").for_chat(key).get("爬山")) == "周六去九溪"
    for chat in ("test:g1", "g1", "1"):
        shown = notes(data, "get", "爬山", "--chat", chat)
        assert shown.exit_code == 0 and shown.output == "周六去九溪\n", (chat, shown.output)
    assert notes(data, "set", "规矩", "--chat", "global", stdin="不刷屏").exit_code == 0
    assert notes(data, "get", "规矩", "--chat", "global").output == "不刷屏\n"
    assert asyncio.run(NoteScopes(data / "notes").global_scope().get("规矩")) == "不刷屏"


def test_an_unknown_chat_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "d"
    record_chat(data)
    result = notes(data, "set", "爬山", "--chat", "nosuch:chat", stdin="x")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert f"no chat 'nosuch:chat' in {data}" in result.output
    assert not (data / "notes").exists()


def test_text_that_is_not_utf8_is_refused_and_the_note_kept(tmp_path: Path) -> None:
    data = tmp_path / "d"
    record_chat(data)
    assert notes(data, "set", "爬山", "--chat", "g1", stdin="原来的").exit_code == 0
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe")
    from_file = notes(data, "set", "爬山", "--file", str(bad), "--chat", "g1")
    assert from_file.exit_code == 1 and isinstance(from_file.exception, SystemExit), from_file.output
    assert f"{bad} is not UTF-8 text (byte 0xff at offset 0); nothing changed" in from_file.output
    from_stdin = notes(data, "set", "爬山", "--chat", "g1", stdin=b"ok \xff")
    assert from_stdin.exit_code == 1 and isinstance(from_stdin.exception, SystemExit), from_stdin.output
    assert "standard input is not UTF-8 text (byte 0xff at offset 3)" in from_stdin.output
    assert notes(data, "get", "爬山", "--chat", "g1").output == "原来的\n"


def test_rename_says_which_notes_had_their_links_rewritten(tmp_path: Path) -> None:
    data = tmp_path / "d"
    assert notes(data, "set", "爬山计划", "--chat", "global", stdin="见 [[煤球]]").exit_code == 0
    assert notes(data, "set", "煤球", "--chat", "global", stdin="阿红的猫").exit_code == 0
    renamed = notes(data, "rename", "煤球", "黑猫", "--chat", "global")
    assert renamed.exit_code == 0, renamed.output
    assert renamed.output == "renamed 煤球 → 黑猫; links rewritten in 1 notes (爬山计划)\n"


def test_a_notes_folder_that_cannot_be_used_is_a_clear_error(tmp_path: Path) -> None:
    """`notes` in the data directory being a file (or a folder the user may not write) failed every
    notes command with a NotADirectoryError traceback (found by the QA pass on a broken data dir)."""
    data = tmp_path / "d"
    record_chat(data)
    (data / "notes").write_text("not a folder", encoding="utf-8")
    for args, stdin in ((("set", "爬山", "--chat", "g1"), "周六"), (("list", "--chat", "g1"), None)):
        result = notes(data, *args, stdin=stdin)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert "the notes folder cannot be used: Not a directory:" in result.output
        assert str(data / "notes") in result.output
    assert (data / "notes").read_text(encoding="utf-8") == "not a folder"
