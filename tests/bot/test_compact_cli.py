"""`qunyi compact` on real data directories: after a prune it gives the space back and keeps every row;
`--dry-run` changes nothing; too little disk, a busy database and a running bot are refused, changing
nothing; Ctrl-C or a crash midway loses nothing; doctor's warning on much free space."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bot.cli import compact as compact_cli
from bot.cli.doctor import COMPACT_WARN_BYTES, COMPACT_WARN_SHARE, worth_compacting
from bot.cli.main import cli
from bot.cli.printing import command_hint, size_text
from bot.pid_file import BOT, COMPACT, Holder, hold, holder
from bot.writers import excluding_writers, writing
from memory.storage import compact as storage_compact
from memory.storage.compact import Compacted, Space, measure
from tests.bot.test_run_cli import (
    ROOT,
    _console_bot,
    _reload,
    _run_once,
    _texts,
    _wait_for,
    _wait_for_texts,
    python,
)
from tests.memory.storage.filled import OLD, fill, pages, rows
from tests.waiting import wait_until

JSON_KEYS = {"path", "bytes_before", "bytes_after", "reclaimable_bytes", "seconds", "dry_run", "wal_emptied"}


def qunyi(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "250"})


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 messages with their vectors, 4,000 bulk vectors of the model in force and 6,000 of OLD."""
    folder = tmp_path_factory.mktemp("template") / "data"
    asyncio.run(fill(folder, old_vectors=6000, kept_vectors=4000))
    return folder


@pytest.fixture
def data(template: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(template, tmp_path / "data"))


def pruned(data: Path) -> Result:
    result = qunyi("embeddings", "prune", "--model", OLD, "--data-dir", data)
    assert result.exit_code == 0, result.output
    return result


def digest(database: Path) -> str:
    return hashlib.sha256(database.read_bytes()).hexdigest()


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == JSON_KEYS
    return report


def test_after_a_prune_compact_gives_the_space_back_and_keeps_every_row(data: Path) -> None:
    database = data / "qunyi.db"
    recall_before = qunyi("recall", "爬山", "--chat", "test:g0", "--data-dir", data)
    pruned_output = pruned(data).output
    freed = measure(database)
    assert freed.reclaimable > 8_000_000, "the prune left free pages in the file"
    assert (
        f"could now shrink by {size_text(freed.reclaimable)}; with the bot stopped, "
        f"`qunyi compact --data-dir {data}` gives that back to the disk"
    ) in pruned_output
    kept = rows(database)
    report = as_json(qunyi("compact", "--data-dir", data, "--json"))
    assert report["path"] == str(database) and report["dry_run"] is False and report["wal_emptied"] is True
    assert report["bytes_before"] == freed.file_bytes and report["reclaimable_bytes"] == freed.reclaimable
    assert report["bytes_after"] == database.stat().st_size
    assert report["bytes_after"] <= report["bytes_before"] - report["reclaimable_bytes"]
    assert isinstance(report["seconds"], float) and report["seconds"] >= 0
    assert not database.with_name("qunyi.db-wal").exists(), "the -wal file does not keep the old size"
    assert sorted(p.name for p in data.iterdir()) == ["qunyi.db"], "no temporary copy or pid file is left"
    assert pages(database)[1] == 0
    assert rows(database) == kept
    with closing(sqlite3.connect(database)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    recall_after = qunyi("recall", "爬山", "--chat", "test:g0", "--data-dir", data)
    assert recall_after.exit_code == 0 and "爬山" in recall_after.output
    assert recall_after.output == recall_before.output
    again = qunyi("compact", "--data-dir", data)
    assert again.exit_code == 0, again.output
    size = size_text(database.stat().st_size)
    assert again.output.startswith(f"compacted {database}: {size} → {size} (0 bytes given back) in ")


def test_a_dry_run_reports_and_changes_nothing(data: Path) -> None:
    pruned(data)
    database = data / "qunyi.db"
    before = digest(database)
    free_pages = pages(database)[1]
    report = as_json(qunyi("compact", "--dry-run", "--json", "--data-dir", data))
    assert report["dry_run"] is True and report["wal_emptied"] is None and report["path"] == str(database)
    assert report["reclaimable_bytes"] == free_pages * 4096 > 0
    assert report["bytes_before"] == report["bytes_after"] == database.stat().st_size
    text = qunyi("compact", "--dry-run", "--data-dir", data)
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[0] == (
        f"{database}: {size_text(database.stat().st_size)} on disk, {size_text(free_pages * 4096)} of it in "
        "free pages (compacting gives back at least that)"
    )
    assert lines[1].startswith(
        f"compacting needs {size_text(measure(database).needed)} free on the disk of {data}"
    )
    assert lines[-1] == "nothing changed (--dry-run)"
    assert digest(database) == before and pages(database)[1] == free_pages
    assert sorted(p.name for p in data.iterdir()) == ["qunyi.db"]


def test_a_reader_on_the_old_view_keeps_the_packed_pages_in_the_wal_and_compact_says_so(data: Path) -> None:
    """A `qunyi backup` reading all the while: the checkpoint after the VACUUM cannot fold the packed pages
    back, so the database and its -wal file took more than before (it printed "636.3 MB → 1.1 GB (0
    bytes given back)"). Once the reader is done, its closing folds them back."""
    pruned(data)
    database, wal = data / "qunyi.db", data / "qunyi.db-wal"
    kept, freed = rows(database), measure(database)
    env = {"COLUMNS": "250", "QUNYI__STORAGE__BUSY_TIMEOUT_MS": "200"}
    with closing(sqlite3.connect(database, isolation_level=None)) as reader:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM messages").fetchone()[0] == 120
        text = CliRunner().invoke(cli, ["compact", "--data-dir", str(data)], env=env)
        report = json.loads(
            CliRunner().invoke(cli, ["compact", "--json", "--data-dir", str(data)], env=env).stdout
        )
        assert wal.stat().st_size > 0
        reader.execute("COMMIT")
    assert text.exit_code == 0, text.output
    assert text.output.startswith(f"compacted {database} in ")
    assert "another process (a `qunyi backup`, the admin console) was still reading it" in text.output
    assert "given back" not in text.output
    assert report["wal_emptied"] is False and report["dry_run"] is False
    assert report["bytes_after"] > report["bytes_before"] - report["reclaimable_bytes"]
    assert not wal.exists() or wal.stat().st_size == 0
    assert database.stat().st_size <= freed.file_bytes - freed.reclaimable
    assert rows(database) == kept


def test_too_little_free_disk_is_refused_and_changes_nothing(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pruned(data)
    database = data / "qunyi.db"
    needed = measure(database).needed
    before, kept = digest(database), rows(database)
    monkeypatch.setattr(storage_compact, "free_space", lambda _folder: needed - 1)
    refused = qunyi("compact", "--data-dir", data)
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert (
        f"not enough free disk space to compact {database}: it needs {size_text(needed)} free in {data} for "
        f"a packed copy of the database and its -wal file, and {size_text(needed - 1)} is free; nothing was "
        "changed"
    ) in refused.output
    dry = qunyi("compact", "--dry-run", "--data-dir", data)
    assert "not enough to compact now: free some space first" in dry.output
    assert digest(database) == before and rows(database) == kept
    assert sorted(p.name for p in data.iterdir()) == ["qunyi.db"], "no pid file is left"
    monkeypatch.setattr(storage_compact, "free_space", lambda _folder: needed)
    assert qunyi("compact", "--data-dir", data).exit_code == 0
    assert pages(database)[1] == 0 and rows(database) == kept


def test_a_data_dir_it_cannot_take_is_a_clean_error_and_changes_nothing(data: Path) -> None:
    pruned(data)
    database = data / "qunyi.db"
    (data / "qunyi.pid").mkdir()
    before = digest(database)
    result = qunyi("compact", "--data-dir", data)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"cannot compact {database}: Is a directory; nothing was changed" in result.output
    assert digest(database) == before


def test_a_writer_is_waited_for_and_one_that_stays_is_a_clean_error(data: Path, tmp_path: Path) -> None:
    pruned(data)
    database = data / "qunyi.db"
    kept = rows(database)
    held, release = threading.Event(), threading.Event()

    def write_a_while() -> None:
        with closing(sqlite3.connect(database, isolation_level=None)) as writer:
            writer.execute("BEGIN IMMEDIATE")
            held.set()
            release.wait(60)
            writer.execute("ROLLBACK")

    other = threading.Thread(target=write_a_while)
    other.start()
    try:
        assert held.wait(60)
        config = tmp_path / "config.toml"
        config.write_text("[storage]\nbusy_timeout_ms = 200\n", encoding="utf-8")
        before = digest(database)
        locked = qunyi("compact", "--config", config, "--data-dir", data)
        assert locked.exit_code == 1 and "Traceback" not in locked.output
        assert (
            f"database {database} stayed locked for over 200 ms: another process is writing" in locked.output
        )
        assert "nothing was changed" in locked.output
        assert digest(database) == before
        threading.Timer(0.5, release.set).start()  # the default busy timeout, 10 s, outlasts this writer
        waited = qunyi("compact", "--data-dir", data)
    finally:
        release.set()
        other.join(60)
    assert waited.exit_code == 0, waited.output
    assert pages(database)[1] == 0 and rows(database) == kept


def test_compact_refuses_while_a_bot_runs_and_the_bot_goes_on(data: Path, tmp_path: Path) -> None:
    pruned(data)
    database = data / "qunyi.db"
    config = tmp_path / "config.toml"
    config.write_text('[logging]\nlevel = "WARNING"\n', encoding="utf-8")
    size = database.stat().st_size
    with _console_bot(data, config, tmp_path / "bot.txt") as bot:
        assert bot.stdin is not None
        _wait_for(data / "qunyi.pid")
        wait_until(lambda: holder(data) == Holder(bot.pid, BOT), "the bot took the data directory")
        bot.stdin.write("周六去西湖边爬山\n")
        bot.stdin.flush()
        _wait_for_texts(database, 121)
        refused = qunyi("compact", "--data-dir", data)
        assert refused.exit_code == 1 and "Traceback" not in refused.output
        assert (
            f"a bot (pid {bot.pid}) is running on {data}: stop it, run `qunyi compact --data-dir {data}`, "
            "then start it again"
        ) in refused.output
        dry = qunyi("compact", "--dry-run", "--data-dir", data)
        assert dry.exit_code == 0 and f"a bot (pid {bot.pid}) is running on {data}" in dry.output
        assert "writing to the database" not in dry.output, "the bot, a writer too, is named once"
        assert database.stat().st_size >= size, "nothing was compacted"
        assert holder(data) == Holder(bot.pid, BOT), "the bot's pid file is as it was"
        bot.stdin.write("last words\n")
        bot.stdin.flush()
        _wait_for_texts(database, 122)
        bot.send_signal(signal.SIGTERM)
        bot.wait(timeout=30)
    assert bot.returncode == 0
    kept = rows(database)
    done = qunyi("compact", "--data-dir", data)
    assert done.exit_code == 0, done.output
    assert pages(database)[1] == 0 and rows(database) == kept
    assert _texts(database)[-2:] == ["周六去西湖边爬山", "last words"]


def test_a_bot_is_refused_while_compact_holds_the_data_dir(data: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    with hold(data, COMPACT):
        started = _run_once(data, config)
        reload = _reload(data, config)
        again = qunyi("compact", "--data-dir", data)
    assert started.returncode == 1 and "Traceback" not in started.stderr
    assert (
        f"`qunyi compact` (pid {os.getpid()}) is compacting the database in {data}; start the bot when it "
        "is done"
    ) in started.stderr
    assert reload.returncode == 1 and "no running bot was found" in reload.stderr, "SIGHUP would end compact"
    assert again.exit_code == 1
    assert f"`qunyi compact` (pid {os.getpid()}) is already compacting the database in {data}" in again.output
    assert not (data / "qunyi.pid").exists()


def test_compact_holds_the_data_dir_while_the_vacuum_runs(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Holder | None] = []
    real = compact_cli.compact

    def watched(*args: Any) -> Any:
        seen.append(holder(data))
        return real(*args)

    monkeypatch.setattr(compact_cli, "compact", watched)
    assert qunyi("compact", "--data-dir", data).exit_code == 0
    assert seen == [Holder(os.getpid(), COMPACT)]
    assert holder(data) is None and not (data / "qunyi.pid").exists()


# Run `qunyi compact` in a process that acts at a point of the VACUUM the VACUUM itself reaches, so
# no thread races it: for a Ctrl-C or SIGTERM, at a look of the VACUUM at its stop event while its
# temporary copy is open in the data directory (the copy is being built), holding the VACUUM there until
# the signal has reached the command (or a minute has passed: a command deaf to it then finishes); for a
# SIGKILL, when compact goes to fold the -wal file into the database, with the automatic checkpoint off so
# that the -wal file holds every packed page and the database file none of them.
WATCHED_COMPACT = """
import os, signal, sqlite3, sys, time
from pathlib import Path
from memory.storage import compact
data, act = Path(sys.argv[1]), sys.argv[2]

def copy_open() -> bool:
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(str(data / "etilqs_")):
                return True
        except OSError:
            pass
    return False

def signalling(stopped):
    acted = False

    def look() -> int:
        nonlocal acted
        if not acted and copy_open():
            acted = True
            print("acting", flush=True)
            os.kill(os.getpid(), signal.SIGINT if act == "interrupt" else signal.SIGTERM)
            deadline = time.monotonic() + 60
            while not stopped() and time.monotonic() < deadline:
                time.sleep(0.001)
        return stopped()

    return look

class Watched(sqlite3.Connection):
    def set_progress_handler(self, handler, n):
        super().set_progress_handler(handler and signalling(handler), n)

def killed_before_folding_back(connection: sqlite3.Connection) -> bool:
    print("acting", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("still alive")

def connect(*args, **kwargs) -> sqlite3.Connection:
    if act != "kill":
        return real_connect(*args, factory=Watched, **kwargs)
    connection = real_connect(*args, **kwargs)
    connection.execute("PRAGMA wal_autocheckpoint = 0")
    return connection

real_connect, sqlite3.connect = sqlite3.connect, connect
if act == "kill":
    compact._empty_wal = killed_before_folding_back
from bot.cli.main import cli
cli(["compact", "--data-dir", str(data)])
"""


def _watched_compact(data: Path, act: str) -> subprocess.CompletedProcess[str]:
    return python("-c", WATCHED_COMPACT, str(data), act, timeout=300)


def _grown(data: Path) -> Path:
    """`data` pruned, with 12,000 more vectors of the model in force: a VACUUM long enough to act in."""
    pruned(data)
    with closing(sqlite3.connect(data / "qunyi.db")) as connection, connection:
        connection.execute(
            "INSERT INTO embeddings (kind, ref_id, chat_id, model, dimension, vector, created_at) "
            "SELECT 'history', ref_id, chat_id, model, dimension, randomblob(6144), created_at "
            "FROM embeddings WHERE ref_id >= 1000000"
        )
    return data / "qunyi.db"


@pytest.mark.parametrize(
    ("act", "code", "said"),
    [
        ("interrupt", 130, "qunyi compact: stopped by Ctrl-C"),
        ("terminate", 143, "qunyi compact: terminated by SIGTERM"),
    ],
)
def test_ctrl_c_or_sigterm_mid_vacuum_stops_it_and_loses_nothing(
    data: Path, act: str, code: int, said: str
) -> None:
    """A SIGTERM stops it as Ctrl-C does, but ends it as terminated (it said "stopped by Ctrl-C" and
    exited 130, as if someone had pressed Ctrl-C)."""
    database = _grown(data)
    kept, counts = rows(database), pages(database)
    stopped = _watched_compact(data, act)
    assert stopped.stdout == "acting\n", "the temporary copy was being built in the data directory"
    assert stopped.returncode == code, stopped.stderr
    assert stopped.stderr.splitlines()[-1] == said, stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert pages(database) == counts, "nothing was compacted"
    assert rows(database) == kept
    assert sorted(p.name for p in data.iterdir()) == ["qunyi.db"], "no copy, -wal or pid file is left"


def test_a_crash_mid_vacuum_loses_nothing(data: Path) -> None:
    database = _grown(data)
    kept = rows(database)
    before = digest(database)
    crashed = _watched_compact(data, "kill")
    assert crashed.returncode == -signal.SIGKILL and crashed.stdout == "acting\n", crashed.stderr
    assert database.with_name("qunyi.db-wal").stat().st_size > 2_000_000, "killed with the pages half back"
    assert digest(database) == before, "none of them folded back into the database file yet"
    assert rows(database) == kept
    with closing(sqlite3.connect(database)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    again = qunyi("compact", "--data-dir", data)
    assert again.exit_code == 0, again.output
    assert pages(database)[1] == 0 and rows(database) == kept
    assert sorted(p.name for p in data.iterdir()) == ["qunyi.db"]


def test_ctrl_c_during_the_last_step_waits_for_it_and_answers_with_the_result(
    data: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Writing the packed pages back cannot be stopped: a Ctrl-C then waits for the VACUUM's end, and
    the command says the database was compacted rather than "Aborted!" over a compacted database."""
    pruned(data)
    database = data / "qunyi.db"
    last_step, finish = threading.Event(), threading.Event()
    stopped: list[bool] = []
    real = compact_cli.compact

    def unstoppable(path: Path, busy_timeout_ms: int, stop: threading.Event) -> Compacted:
        last_step.set()
        finish.wait(60)
        stopped.append(stop.is_set())
        return real(path, busy_timeout_ms)

    async def interrupted() -> Compacted:
        task = asyncio.create_task(compact_cli._compacted(database, 10_000))
        assert await asyncio.to_thread(last_step.wait, 60)
        task.cancel()
        await asyncio.sleep(0)  # the cancellation reaches the task, which asks the VACUUM to stop
        finish.set()
        return await task

    monkeypatch.setattr(compact_cli, "compact", unstoppable)
    done = asyncio.run(interrupted())
    assert stopped == [True]
    assert done.bytes_after == database.stat().st_size < done.before.file_bytes
    assert "Ctrl-C came during the last step of the VACUUM" in capsys.readouterr().err


def _space(reclaimable: int, file_bytes: int) -> Space:
    return Space(file_bytes, 4096, file_bytes // 4096, reclaimable // 4096, 10**12)


def test_free_pages_are_worth_compacting_over_both_thresholds_only() -> None:
    assert COMPACT_WARN_BYTES == 15_625 * 4096  # whole pages land on the threshold below
    at, over = COMPACT_WARN_BYTES, COMPACT_WARN_BYTES + 4096
    assert not worth_compacting(_space(at, 2 * at))
    assert worth_compacting(_space(over, 2 * over))
    share = int(over / COMPACT_WARN_SHARE)
    assert not worth_compacting(_space(over, share)), "exactly a quarter of the file"
    assert worth_compacting(_space(over, share - 4096))
    assert not worth_compacting(_space(over, share + 4096))


def test_doctor_warns_of_much_free_space_with_the_command(data: Path, tmp_path: Path) -> None:
    config = tmp_path / "设置 config.toml"
    config.write_text("", encoding="utf-8")
    doctor = ["doctor", "--config", str(config), "--data-dir", str(data)]
    small = qunyi(*doctor)
    assert small.exit_code == 0, small.output
    pruned(data)
    assert not worth_compacting(measure(data / "qunyi.db"))
    assert "reclaimable space" not in qunyi(*doctor).output
    with closing(sqlite3.connect(data / "qunyi.db")) as connection, connection:
        connection.execute(
            "INSERT INTO embeddings (kind, ref_id, chat_id, model, dimension, vector, created_at) "
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 9000) "
            "SELECT 'preference', i, (SELECT min(id) FROM chats), 'big', 2048, randomblob(8192), 0 FROM n"
        )
    with closing(sqlite3.connect(data / "qunyi.db")) as connection, connection:
        connection.execute("DELETE FROM embeddings WHERE model = 'big'")
    space = measure(data / "qunyi.db")
    assert worth_compacting(space)
    result = CliRunner().invoke(cli, doctor, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if "reclaimable space" in line)
    assert "warn" in line
    assert (
        f"{size_text(space.reclaimable)} of the database's {size_text(space.file_bytes)} on disk are free "
        f"pages left by deleted memory; with the bot stopped, `{command_hint(['compact'], config, data)}` "
        "gives them back to the disk"
    ) in line


@contextmanager
def _web(data: Path, config: Path) -> Iterator[subprocess.Popen[str]]:
    """`qunyi web` on a free port, once it serves (it holds the data directory for writing by then);
    stopped at the end."""
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bot.cli.main",
            "web",
            "--port",
            "0",
            "--config",
            str(config),
            "--data-dir",
            str(data),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    try:
        assert web.stdout is not None
        first = web.stdout.readline()
        assert first.startswith("Qunyi admin console on "), first + web.stdout.read()
        yield web
    finally:
        if web.poll() is None:
            web.send_signal(signal.SIGTERM)
            web.wait(timeout=30)


def _quiet_config(tmp_path: Path) -> Path:
    config = tmp_path / "config.toml"
    config.write_text('[logging]\nlevel = "WARNING"\n', encoding="utf-8")
    return config


def test_compact_refuses_while_other_processes_write_and_names_them(data: Path, tmp_path: Path) -> None:
    """`qunyi web` and an import (held here) write the database beside each other: compact, which would
    make their writes fail, is refused, naming both; a dry run names them too. Once they end it runs."""
    pruned(data)
    database = data / "qunyi.db"
    counts, kept = pages(database), rows(database)
    with _web(data, _quiet_config(tmp_path)) as web, writing(data, "import"):
        refused = qunyi("compact", "--data-dir", data)
        dry = qunyi("compact", "--dry-run", "--data-dir", data)
        assert pages(database) == counts, "nothing was compacted"
        assert holder(data) is None, "compact let the pid file go"
    assert web.returncode == 0
    (first_pid, first), (second_pid, second) = sorted([(web.pid, "web"), (os.getpid(), "import")])
    named = f"`qunyi {first}` (pid {first_pid}) and `qunyi {second}` (pid {second_pid}) are writing"
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert (
        f"{named} to the database in {data}: let them end or stop them, run `qunyi compact --data-dir "
        f"{data}`, then start them again if stopped (compacting holds the database's write lock from start "
        "to end, and writes meanwhile would fail)"
    ) in refused.output
    assert dry.exit_code == 0, dry.output
    assert f"{named} to the database in {data}" in dry.output
    assert dry.output.splitlines()[-1] == "nothing changed (--dry-run)"
    done = qunyi("compact", "--data-dir", data)
    assert done.exit_code == 0, done.output
    assert pages(database)[1] == 0 and rows(database) == kept
    assert sorted(p.name for p in data.iterdir()) == ["qunyi.db"], "no marker of a writer is left"


# Writing commands, each refused while compact holds the data directory. Without the refusal each would
# run (a change, an import) or fail otherwise (no such person, entry or model: another message).
ONE_SHOT_WRITERS = [
    ["import", "replay", "LOG", "--no-progress"],
    ["replay", "LOG", "--no-progress"],
    ["people", "edit", "u1", "--name", "红", "--chat", "test:g0"],
    ["people", "merge", "u1", "u3", "--chat", "test:g1"],
    ["people", "forget", "u1", "--yes", "--chat", "test:g1"],
    ["jargon", "approve", "1"],
    ["jargon", "reject", "1"],
    ["jargon", "edit", "1", "--meaning", "火锅"],
    ["jargon", "delete", "1"],
    ["jargon", "import", "DICT"],
    ["forget"],
    ["chats", "merge", "test:g0", "test:g1"],
    ["chats", "merge", "test:g0", "test:g1", "--dry-run"],
    ["embeddings", "prune", "--model", OLD],
]
# Reading commands go on while compact runs, as they did: they do not hold the data directory.
READERS = [
    ["people", "list", "--chat", "test:g0"],
    ["people", "show", "u1", "--chat", "test:g1"],
    ["recall", "爬山", "--chat", "test:g0"],
    ["who", "u1", "--chat", "test:g1"],
    ["what", "火锅", "--chat", "test:g1"],
    ["topics", "--chat", "test:g0"],
    ["chats", "list"],
    ["jargon", "list"],
    ["jargon", "export", "-"],
    ["notes", "list", "--chat", "global"],
    ["embeddings", "status"],
    ["embeddings", "prune", "--model", OLD, "--dry-run"],
    ["forget", "--dry-run"],
    ["forget", "--log"],
    ["doctor"],
    ["backup", "BACKUP"],
    ["compact", "--dry-run"],
]


def _filled_in(args: list[str], tmp_path: Path) -> list[str]:
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"chat": "g9", "message_id": "m1", "sender_id": "u1", "sender_name": "小红", '
        '"time": "2026-03-01T20:15:00+08:00", "text": "周六去爬山吗"}\n',
        encoding="utf-8",
    )
    dictionary = tmp_path / "dict.csv"
    dictionary.write_text("content,meaning\n开炉,吃火锅\n", encoding="utf-8")
    names = {"LOG": log, "DICT": dictionary, "BACKUP": tmp_path / "backup"}
    return [str(names.get(a, a)) for a in args]


@contextmanager
def _compacting(data: Path) -> Iterator[None]:
    """The data directory held as `qunyi compact` holds it, by this process."""
    with hold(data, COMPACT), excluding_writers(data):
        yield


def test_writers_are_refused_at_once_while_compact_holds_the_data_dir(data: Path, tmp_path: Path) -> None:
    database = data / "qunyi.db"
    before, kept = digest(database), rows(database)
    config = _quiet_config(tmp_path)
    refusal = (
        f"`qunyi compact` (pid {os.getpid()}) is rewriting the database in {data}; try again when it ends"
    )
    with _compacting(data):
        for args in ONE_SHOT_WRITERS:
            result = qunyi(*_filled_in(args, tmp_path), "--data-dir", data)
            assert result.exit_code == 1 and "Traceback" not in result.output, (args, result.output)
            assert refusal in result.output, (args, result.output)
        # Those that run until stopped, in processes of their own: each would serve, not end, if it
        # were not refused (web and run) or end well (mcp, its input empty).
        for args in (["web", "--port", "0"], ["mcp", "--chat", "test:g0", "--write"], ["run"]):
            served = python("-m", "bot.cli.main", *args, "--config", str(config), "--data-dir", str(data))
            assert served.returncode == 1 and "Traceback" not in served.stderr, (args, served.stderr)
            assert refusal in served.stderr, (args, served.stderr)
        assert digest(database) == before
    assert rows(database) == kept
    assert sorted(p.name for p in data.iterdir()) == ["qunyi.db"], "no marker of a writer is left"


def test_reading_commands_go_on_while_compact_holds_the_data_dir(data: Path, tmp_path: Path) -> None:
    with _compacting(data):
        for args in READERS:
            result = qunyi(*_filled_in(args, tmp_path), "--data-dir", data)
            assert result.exit_code == 0, (args, result.output)
        served = python("-m", "bot.cli.main", "mcp", "--chat", "test:g0", "--data-dir", str(data))
        assert served.returncode == 0, "mcp without --write only reads: " + served.stderr
    dry = qunyi("compact", "--dry-run", "--data-dir", data)
    assert "is already compacting" not in dry.output


# A process holding the data directory as a writer (`qunyi web`) or as `qunyi compact` does, until killed.
HOLD_UNTIL_KILLED = """
import contextlib, sys, time
from pathlib import Path
from bot.pid_file import COMPACT, hold
from bot.writers import excluding_writers, writing
data, what = Path(sys.argv[1]), sys.argv[2]
with contextlib.ExitStack() as held:
    if what == "compact":
        held.enter_context(hold(data, COMPACT))
        held.enter_context(excluding_writers(data))
    else:
        held.enter_context(writing(data, "web"))
    print("holding", flush=True)
    time.sleep(600)
"""


@contextmanager
def _held_until_killed(data: Path, what: str) -> Iterator[subprocess.Popen[str]]:
    holding = subprocess.Popen(
        [sys.executable, "-c", HOLD_UNTIL_KILLED, str(data), what],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    try:
        assert holding.stdout is not None and holding.stdout.readline() == "holding\n"
        yield holding
    finally:
        if holding.poll() is None:
            holding.kill()
            holding.wait()


def _markers(data: Path) -> list[str]:
    return [p.name for p in data.iterdir() if p.name.startswith("qunyi.writer-")]


def test_a_killed_writer_or_compact_blocks_nobody(data: Path) -> None:
    hint = f"qunyi compact --data-dir {data}"
    with _held_until_killed(data, "writer") as writer:
        refused = qunyi("compact", "--data-dir", data)
        assert refused.exit_code == 1, refused.output
        assert (
            f"`qunyi web` (pid {writer.pid}) is writing to the database in {data}: let it end or stop it, "
            f"run `{hint}`, then start it again if stopped"
        ) in refused.output
        writer.kill()
        writer.wait()
    assert _markers(data), "a killed writer leaves its marker behind"
    after_writer = qunyi("compact", "--data-dir", data)
    assert after_writer.exit_code == 0, after_writer.output
    assert sorted(p.name for p in data.iterdir()) == ["qunyi.db"], "compact removed the marker left"
    with _held_until_killed(data, "compact") as compacting:
        refused = qunyi("forget", "--data-dir", data)
        assert refused.exit_code == 1, refused.output
        assert f"`qunyi compact` (pid {compacting.pid}) is rewriting the database in {data}" in refused.output
        compacting.kill()
        compacting.wait()
    assert (data / "qunyi.pid").exists(), "a killed compact leaves its pid file behind"
    forgot = qunyi("forget", "--data-dir", data)
    assert forgot.exit_code == 0, forgot.output
    again = qunyi("compact", "--data-dir", data)
    assert again.exit_code == 0, again.output
    assert sorted(p.name for p in data.iterdir()) == ["qunyi.db"]
