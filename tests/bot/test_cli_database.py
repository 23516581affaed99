"""Every command on a data directory without a database, or with a file that is not one: a one-line
error (never a traceback), and read-only commands create nothing."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from click.testing import CliRunner, Result

from bot.cli.main import cli
from memory.storage import Database, migrate
from tests.conftest import T0
from tests.memory.recall.conftest import add_history
from tests.memory.storage.test_migrations import schema_at

READ_ONLY = [
    ["forget", "--dry-run"],
    ["forget", "--log"],
    ["recall", "爬山", "--chat", "replay:g1"],
    ["who", "小红", "--chat", "replay:g1"],
    ["what", "yyds", "--chat", "replay:g1"],
    ["topics", "--chat", "replay:g1"],
    ["people", "list", "--chat", "replay:g1"],
    ["people", "show", "小红", "--chat", "replay:g1"],
    ["jargon", "list"],
    ["jargon", "show", "1"],
    ["jargon", "export", "-"],
    ["notes", "list", "--chat", "replay:g1"],
    ["notes", "get", "爬山", "--chat", "replay:g1"],
    ["notes", "list", "--chat", "global"],
    ["embeddings", "status"],
    ["embeddings", "prune", "--model", "m"],
    ["compact", "--dry-run"],
]
# Changes to a chat, an entry or a note that must already be there: in a mistyped --data-dir they
# used to leave a new, empty database behind, so that directory then looked like an empty memory.
CHANGING_WHAT_IS_THERE = [
    ["people", "edit", "小红", "--name", "红", "--chat", "replay:g1"],
    ["people", "merge", "小红", "阿明", "--chat", "replay:g1"],
    ["people", "forget", "小红", "--yes", "--chat", "replay:g1"],
    ["jargon", "approve", "1"],
    ["jargon", "reject", "1"],
    ["jargon", "edit", "1", "--meaning", "火锅"],
    ["jargon", "delete", "1"],
    ["notes", "rename", "爬山", "登山", "--chat", "global"],
    ["notes", "delete", "爬山", "--chat", "global"],
    ["compact"],
]
WRITING = [
    ["replay", "LOG", "--no-progress"],
    ["import", "replay", "LOG", "--no-progress"],
    ["jargon", "import", "DICT"],
    ["notes", "set", "爬山", "--chat", "global"],
]


def invoke(args: list[str], data: Path, tmp_path: Path) -> Result:
    log = tmp_path / "log.jsonl"
    log.write_text("", encoding="utf-8")
    dictionary = tmp_path / "dict.csv"
    dictionary.write_text("content,meaning\n开炉,吃火锅\n", encoding="utf-8")
    args = [{"LOG": str(log), "DICT": str(dictionary)}.get(a, a) for a in args]
    return CliRunner().invoke(cli, [*args, "--data-dir", str(data)], input="text\n", env={"COLUMNS": "250"})


ONE_MESSAGE = (
    '{"chat": "g1", "message_id": "m1", "sender_id": "u1", "sender_name": "小红", '
    '"time": "2026-03-01T20:15:00+08:00", "text": "周六去爬山吗"}\n'
)


def replayed_one(tmp_path: Path) -> Path:
    """A data directory holding ONE_MESSAGE, replayed as chat replay:g1."""
    data = tmp_path / "d"
    log = tmp_path / "one.jsonl"
    log.write_text(ONE_MESSAGE, encoding="utf-8")
    replayed = CliRunner().invoke(cli, ["replay", str(log), "--no-progress", "--data-dir", str(data)])
    assert replayed.exit_code == 0, replayed.output
    return data


def no_traceback(result: Result) -> bool:
    return result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("args", READ_ONLY + CHANGING_WHAT_IS_THERE, ids=" ".join)
def test_commands_needing_what_memory_holds_refuse_a_missing_database_and_create_nothing(
    args: list[str], tmp_path: Path
) -> None:
    data = tmp_path / "typo_dir"
    result = invoke(args, data, tmp_path)
    assert result.exit_code == 1 and no_traceback(result), result.output
    assert (
        f"no database in {data} (run `qunyi replay`/`qunyi run` first, or check --data-dir)" in result.output
    )
    assert not data.exists()


def test_writing_commands_still_create_the_database(tmp_path: Path) -> None:
    data = tmp_path / "d"
    result = invoke(["replay", "LOG", "--no-progress"], data, tmp_path)
    assert result.exit_code == 0, result.output
    assert (data / "qunyi.db").is_file()
    notes = invoke(["notes", "set", "爬山", "--chat", "global"], tmp_path / "d2", tmp_path)
    assert notes.exit_code == 0, notes.output
    assert (tmp_path / "d2" / "qunyi.db").is_file()
    dictionary = invoke(["jargon", "import", "DICT"], tmp_path / "d3", tmp_path)
    assert dictionary.exit_code == 0, dictionary.output
    assert (tmp_path / "d3" / "qunyi.db").is_file()


@pytest.mark.parametrize("args", READ_ONLY + CHANGING_WHAT_IS_THERE + WRITING, ids=" ".join)
def test_a_file_that_is_not_a_database_is_a_clean_error(args: list[str], tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    garbage = b"not a sqlite database" * 10
    (data / "qunyi.db").write_bytes(garbage)
    result = invoke(args, data, tmp_path)
    assert result.exit_code == 1 and no_traceback(result), result.output
    assert f"cannot open the database {data / 'qunyi.db'}: file is not a database" in result.output
    assert (data / "qunyi.db").read_bytes() == garbage


@pytest.mark.parametrize(
    "args", [*READ_ONLY, *CHANGING_WHAT_IS_THERE, *WRITING, ["backup", "BACKUP"], ["doctor"]], ids=" ".join
)
def test_a_folder_where_the_database_file_goes_is_named_as_such(args: list[str], tmp_path: Path) -> None:
    """With a folder named qunyi.db in the data directory, the reading commands said there was no
    database and to run `qunyi replay` first, which then failed with SQLite's "unable to open database
    file" (found by the QA pass on broken data directories)."""
    data = tmp_path / "d"
    (data / "qunyi.db").mkdir(parents=True)
    (data / "qunyi.db" / "kept").write_text("x", encoding="utf-8")
    result = invoke([str(tmp_path / "copy") if a == "BACKUP" else a for a in args], data, tmp_path)
    assert result.exit_code == 1 and no_traceback(result), result.output
    assert f"{data / 'qunyi.db'}: it is not a file (a folder is in its place?)" in " ".join(
        result.output.split()
    )
    assert [p.name for p in (data / "qunyi.db").iterdir()] == ["kept"]


@pytest.mark.parametrize("args", READ_ONLY + CHANGING_WHAT_IS_THERE + WRITING, ids=" ".join)
def test_a_database_from_a_newer_qunyi_is_a_clean_error_and_stays_as_it_is(
    args: list[str], tmp_path: Path
) -> None:
    data = tmp_path / "d"
    data.mkdir()
    migrate.upgrade(data / "qunyi.db")
    with sqlite3.connect(data / "qunyi.db") as connection:
        connection.execute(
            "UPDATE alembic_version SET version_num = '0099_future' "
            "WHERE version_num = (SELECT max(version_num) FROM alembic_version)"
        )
    before = (data / "qunyi.db").read_bytes()
    result = invoke(args, data, tmp_path)
    assert result.exit_code == 1 and no_traceback(result), result.output
    assert "its schema revision 0099_future is newer than this version of Qunyi knows" in result.output
    assert (data / "qunyi.db").read_bytes() == before


OLD_REVISION = "0015_embeddings_chat_space"  # the next one, 0016, rewrites stored names
DRY_RUNS = [
    ["forget", "--dry-run"],
    ["chats", "merge", "replay:g1", "replay:g2", "--dry-run"],
    ["embeddings", "prune", "--model", "m", "--dry-run"],
    ["compact", "--dry-run"],
    ["compact", "--dry-run", "--json"],
]


def old_database(data: Path) -> Path:
    """A database a Qunyi of OLD_REVISION left in `data` (made here)."""
    data.mkdir()
    with schema_at(data / "qunyi.db", OLD_REVISION):
        pass
    return data / "qunyi.db"


@pytest.mark.parametrize("args", DRY_RUNS, ids=" ".join)
def test_a_dry_run_on_an_older_schema_refuses_and_changes_nothing(args: list[str], tmp_path: Path) -> None:
    """Opening upgraded the schema (0016 rewriting names) before the dry run said it changed nothing."""
    data = tmp_path / "d"
    database = old_database(data)
    before = database.read_bytes()
    result = invoke(args, data, tmp_path)
    assert result.exit_code == 1 and no_traceback(result), result.output
    newest = migrate.newest(ScriptDirectory.from_config(migrate.alembic_config()).get_heads())
    assert (
        f"the database {database} is at schema revision {OLD_REVISION}; this version of Qunyi upgrades it "
        f"to {newest} when the bot next starts (or when this command runs without --dry-run), and a dry "
        "run changes nothing, so it cannot preview on the old schema"
    ) in " ".join(result.output.split())
    assert database.read_bytes() == before
    assert sorted(p.name for p in data.iterdir()) == ["qunyi.db"]


@pytest.mark.parametrize(
    ("args", "exit_code"),
    [
        (["forget"], 0),
        (["chats", "merge", "replay:g1", "replay:g2"], 2),  # no such chats: after opening
        (["embeddings", "prune", "--model", "m"], 2),  # no such vectors: after opening
        (["compact"], 0),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_the_same_commands_without_dry_run_upgrade_an_older_schema(
    args: list[str], exit_code: int, tmp_path: Path
) -> None:
    data = tmp_path / "d"
    database = old_database(data)
    with pytest.raises(migrate.SchemaBehind):
        migrate.check(database)
    result = invoke(args, data, tmp_path)
    assert result.exit_code == exit_code and no_traceback(result), result.output
    migrate.check(database)  # up to date: raises nothing


def test_a_data_dir_that_cannot_be_made_is_a_clean_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("", encoding="utf-8")
    result = invoke(["replay", "LOG", "--no-progress"], blocker / "d", tmp_path)
    assert result.exit_code == 1 and no_traceback(result), result.output
    assert f"cannot create the folder {blocker / 'd'}" in result.output


@pytest.mark.parametrize(
    "args",
    [
        ["recall", "爬山", "--chat", "g1"],
        ["people", "list", "--chat", "g1"],
        ["jargon", "list", "--chat", "g1"],
        ["notes", "list", "--chat", "g1"],
    ],
    ids=" ".join,
)
def test_a_chat_id_used_on_two_platforms_is_reported_as_ambiguous(args: list[str], tmp_path: Path) -> None:
    log = tmp_path / "two.jsonl"
    line = (
        '{"chat": "g1", "message_id": "m1", "sender_id": "u1", "sender_name": "小红", '
        '"time": "2026-03-01T20:15:00+08:00", "text": "周六去爬山吗"}\n'
    )
    log.write_text(line, encoding="utf-8")
    data = tmp_path / "d"
    for platform in ("replay", "qq"):
        replayed = CliRunner().invoke(
            cli, ["replay", str(log), "--platform", platform, "--no-progress", "--data-dir", str(data)]
        )
        assert replayed.exit_code == 0, replayed.output
    result = invoke(args, data, tmp_path)
    assert result.exit_code == 1 and no_traceback(result), result.output
    assert "'g1' names several chats" in result.output
    assert "(replay:g1, qq:g1); use platform:id" in result.output
    exact = invoke([*args[:-1], "qq:g1"], data, tmp_path)
    assert exact.exit_code == 0, exact.output


@pytest.mark.parametrize("command", ["recall", "who", "what"])
def test_an_empty_query_is_a_usage_error(command: str, tmp_path: Path) -> None:
    result = invoke([command, " ", "--chat", "replay:g1"], tmp_path / "d", tmp_path)
    assert result.exit_code == 2 and no_traceback(result), result.output
    assert "is empty" in result.output.splitlines()[-1]


def test_an_admin_recall_counts_nothing_as_recalled(tmp_path: Path) -> None:
    """`qunyi recall` shows what /recall shows, but inspecting memory must not change what forgetting
    keeps: the topics it shows keep their count."""
    data = replayed_one(tmp_path)

    async def add_topic() -> int:
        db = await Database.open(data)
        try:
            async with db.write() as session:
                return await add_history(session, 1, "周末爬山", "小红约周六爬山", T0, T0, [1], ["爬山"])
        finally:
            await db.close()

    topic = asyncio.run(add_topic())
    result = invoke(["recall", "爬山", "--chat", "replay:g1", "--json"], data, tmp_path)
    assert result.exit_code == 0, result.output
    assert topic in [r["id"] for r in json.loads(result.output)["results"] if r["kind"] == "history"]
    with sqlite3.connect(data / "qunyi.db") as connection:
        assert connection.execute("SELECT count FROM chat_history WHERE id = ?", (topic,)).fetchone() == (0,)


def test_a_chat_id_with_a_colon_in_it_is_found(tmp_path: Path) -> None:
    """Replay chats and QQ text sections may have ":" in their id; `--chat` split at the last colon."""
    log = tmp_path / "colon.jsonl"
    log.write_text(
        '{"chat": "team:dev", "message_id": "m1", "sender_id": "u1", "sender_name": "小红", '
        '"time": "2026-03-01T20:15:00+08:00", "text": "周六去爬山吗"}\n',
        encoding="utf-8",
    )
    data = tmp_path / "d"
    replayed = CliRunner().invoke(cli, ["replay", str(log), "--no-progress", "--data-dir", str(data)])
    assert replayed.exit_code == 0, replayed.output
    for key in ("replay:team:dev", "team:dev"):
        result = invoke(["recall", "爬山", "--chat", key, "--json"], data, tmp_path)
        assert result.exit_code == 0, result.output
        assert [r["text"] for r in json.loads(result.output)["results"]] == ["周六去爬山吗"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["forget", "--log", "--dry-run"], "use one"),
        (["people", "edit", "小红", "--chat", "replay:g1", "--name", " "], "--name is empty"),
        (["import", "replay", "LOG", "--catch-up-rounds", "-1"], "-1 is not in the range"),
        (["import", "replay", "LOG", "--platform", "a:b"], "'a:b' must not hold ':'"),
        (["replay", "LOG", "--platform", "qq:x"], "'qq:x' must not hold ':'"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_options_that_make_no_sense_are_usage_errors(args: list[str], says: str, tmp_path: Path) -> None:
    """They were taken silently: --dry-run ignored beside --log, an empty name a no-op, -1 rounds, and
    a platform with ':' in it, whose chats' platform:id keys no --chat could name (found by the QA
    pass)."""
    result = invoke(args, tmp_path / "d", tmp_path)
    assert result.exit_code == 2 and no_traceback(result), result.output
    assert says in result.output


@pytest.mark.parametrize(
    "args",
    [
        [
            "what",
            "\udcc5\udcc0",
            "--chat",
            "replay:g1",
        ],  # 爬 in GBK, as Python decodes a GBK terminal's bytes
        ["recall", "爬山", "--chat", "replay:g\udcff"],
        ["jargon", "approve", "1", "--meaning=\udcff"],
        ["chats", "merge", "\udcff", "replay:g1"],
        ["who", "\ud800", "--chat", "replay:g1"],  # unpaired, as a Windows command line may hold
    ],
    ids=["what", "chat", "meaning", "merge", "unpaired"],
)
def test_an_argument_that_is_not_utf8_is_a_usage_error(args: list[str], tmp_path: Path) -> None:
    """A terminal that is not in UTF-8 hands Python bytes it keeps as lone surrogates; the commands
    passed them to SQLite and failed with a UnicodeEncodeError traceback (found by the QA pass)."""
    data = replayed_one(tmp_path)
    result = invoke(args, data, tmp_path)
    assert result.exit_code == 2 and no_traceback(result), result.output
    assert "is not UTF-8 text: set the terminal to UTF-8" in result.output
    listed = invoke(["chats", "list", "--json"], data, tmp_path)
    assert [c["messages"] for c in json.loads(listed.output)] == [1]


def test_a_file_whose_name_is_not_utf8_is_still_read(tmp_path: Path) -> None:
    log = tmp_path / "\udcff.jsonl"  # a name the file system holds as the byte 0xff
    log.write_text(ONE_MESSAGE, encoding="utf-8")
    result = invoke(["import", "replay", str(log), "--no-progress"], tmp_path / "d", tmp_path)
    assert result.exit_code == 0, result.output
    assert "1 messages imported" in result.output


@pytest.mark.parametrize("key", ["²", "99999999999999999999999"])
def test_a_chat_key_of_digits_the_database_cannot_hold_is_no_chat(key: str, tmp_path: Path) -> None:
    """A --chat of digits is also tried as the chat's number: "²" (a digit to str.isdigit, not to int)
    failed with a ValueError traceback, one past SQLite's integers with an OverflowError (found by the
    QA pass)."""
    data = replayed_one(tmp_path)
    result = invoke(["recall", "爬山", "--chat", key], data, tmp_path)
    assert result.exit_code == 1 and no_traceback(result), result.output
    assert f"no chat '{key}'" in result.output


@contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """`folder` made read-only: by its mode, or, for root, whom modes do not stop, immutable."""
    folder.chmod(0o555)
    immutable = os.access(folder, os.W_OK)
    try:
        if immutable and subprocess.run(["chattr", "+i", str(folder)], check=False).returncode != 0:
            pytest.skip("root, and chattr cannot make a folder immutable here")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=False)
        folder.chmod(0o755)


@pytest.mark.parametrize(
    "args", [["recall", "爬山", "--chat", "replay:g1"], ["backup", "BACKUP"], ["doctor"]], ids=" ".join
)
def test_a_database_in_a_folder_that_cannot_be_written_says_why_it_cannot_be_read(
    args: list[str], tmp_path: Path
) -> None:
    """Reading a WAL database makes its -shm file beside it; in a read-only folder (a read-only mount, a
    backup copied without write permission) every command said only SQLite's "unable to open database
    file", with the file right there (found by the QA pass on a read-only data directory)."""
    data = replayed_one(tmp_path)
    for leftover in ("qunyi.db-wal", "qunyi.db-shm"):
        (data / leftover).unlink(missing_ok=True)
    with unwritable(data):
        result = invoke([str(tmp_path / "copy") if a == "BACKUP" else a for a in args], data, tmp_path)
    assert result.exit_code == 1 and no_traceback(result), result.output
    said = " ".join(result.output.split())
    assert f"unable to open database file: its folder {data} cannot be written" in said, result.output
