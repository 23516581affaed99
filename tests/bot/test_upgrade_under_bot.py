"""A Qunyi updated in place while its bot runs: the bot, which upgraded the schema when it started, is of
the version before, and the database is left at its schema until it stops. Real SQLite, a real flock on
`qunyi.pid` held as a running bot holds it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.pid_file import BOT, PLUGIN, hold
from memory.storage import migrate
from tests.bot.test_cli_database import READ_ONLY, invoke, no_traceback, old_database

# Every command opening the database to use it (the dry runs refuse an old schema anyway): readers,
# which upgrade it as they open it, and writers, the bot among them.
OPENING = [
    *(args for args in READ_ONLY if "--dry-run" not in args),
    ["replay", "LOG", "--no-progress"],
    ["jargon", "import", "DICT"],
    ["people", "forget", "小红", "--yes", "--chat", "replay:g1"],
    ["run"],
]


@pytest.mark.parametrize("args", OPENING, ids=" ".join)
def test_an_older_schema_is_not_upgraded_under_the_bot_still_running_on_it(
    args: list[str], tmp_path: Path
) -> None:
    """Every command upgraded it as it opened it, `qunyi run` too (refused as a second bot only once
    the schema was upgraded): the bot went on with a schema its code does not know, and could not start
    again on it."""
    data = tmp_path / "d"
    database = old_database(data)
    before = database.read_bytes()
    with hold(data, BOT):
        refused = invoke(args, data, tmp_path)
    assert refused.exit_code == 1 and no_traceback(refused), refused.output
    assert (
        f"a bot (pid {os.getpid()}) is running on {data}, and its database's schema is older than this "
        "version's: that bot is of an older Qunyi (a bot upgrades the schema as it starts), which could "
        "not start again on the upgraded schema. Stop it, then start this version, which upgrades the "
        "schema; nothing was changed"
    ) in " ".join(refused.output.split())
    assert database.read_bytes() == before
    with pytest.raises(migrate.SchemaBehind):
        migrate.check(database)


def test_a_bot_inside_another_program_is_not_upgraded_under_either(tmp_path: Path) -> None:
    """A bot of bot.plugin holds the pid file under its own role: the same refusal."""
    data = tmp_path / "d"
    database = old_database(data)
    before = database.read_bytes()
    with hold(data, PLUGIN):
        refused = invoke(["jargon", "list"], data, tmp_path)
    assert refused.exit_code == 1 and no_traceback(refused), refused.output
    assert f"a bot (pid {os.getpid()}) is running on {data}" in " ".join(refused.output.split())
    assert database.read_bytes() == before


def test_a_command_upgrades_the_schema_once_the_bot_has_stopped(tmp_path: Path) -> None:
    data = tmp_path / "d"
    database = old_database(data)
    with hold(data, BOT):
        assert invoke(["jargon", "list"], data, tmp_path).exit_code == 1
    result = invoke(["jargon", "list"], data, tmp_path)
    assert result.exit_code == 0, result.output
    migrate.check(database)  # upgraded: raises nothing


def test_a_bot_on_a_current_schema_does_not_stop_other_commands(tmp_path: Path) -> None:
    """Nothing to upgrade: readers and writers work beside the running bot as before."""
    data = tmp_path / "d"
    data.mkdir()
    migrate.upgrade(data / "qunyi.db")
    with hold(data, BOT):
        listed = invoke(["jargon", "list"], data, tmp_path)
        imported = invoke(["jargon", "import", "DICT"], data, tmp_path)
    assert listed.exit_code == 0, listed.output
    assert imported.exit_code == 0, imported.output
