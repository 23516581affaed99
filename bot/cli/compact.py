"""`qunyi compact [--dry-run] [--json]`: give the disk back the space deleted memory left inside the
database file (SQLite's VACUUM), with the bot stopped."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import click

from bot.app import resolve_data_dir
from bot.cli.options import (
    async_command,
    database_errors,
    open_config,
    open_database,
    runtime_options,
    sigterm_as_ctrl_c,
)
from bot.cli.printing import command_hint, size_text
from bot.pid_file import COMPACT, DataDirTaken, Holder, hold, holder
from bot.writers import WritersRunning, excluding_writers, writers
from memory.storage import Database, DatabaseLocked, DatabaseWriteFailed
from memory.storage.compact import (
    Compacted,
    CompactStopped,
    NotEnoughSpace,
    Space,
    compact,
    measure,
)
from memory.storage.database import DB_FILENAME, require_database_file


def _taken(data_dir: Path, found: Holder, hint: str) -> str:
    if found.role == COMPACT:
        return f"`qunyi compact` (pid {found.shown_pid}) is already compacting the database in {data_dir}"
    return (
        f"a bot (pid {found.shown_pid}) is running on {data_dir}: stop it, run `{hint}`, then start it "
        "again (compacting holds the database's write lock from start to end, longer than the bot's "
        "writes wait on a large file)"
    )


def _writing(data_dir: Path, found: list[Holder], hint: str) -> str:
    """Why compact waits for the processes writing the database (`found`: those that could be named)."""
    if not found:
        who = "another Qunyi process (`qunyi web`, `qunyi mcp --write`, `qunyi import`, an edit…) is"
    else:
        named = [f"`qunyi {w.role}` (pid {w.shown_pid})" for w in found]
        listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
        who = f"{listed} {'is' if len(named) == 1 else 'are'}"
    them = "it" if len(found) < 2 else "them"
    return (
        f"{who} writing to the database in {data_dir}: let {them} end or stop {them}, run `{hint}`, then "
        f"start {them} again if stopped (compacting holds the database's write lock from start to end, and "
        "writes meanwhile would fail)"
    )


def _space_lines(path: Path, space: Space) -> list[str]:
    lines = [
        f"{path}: {size_text(space.file_bytes)} on disk, {size_text(space.reclaimable)} of it in free pages "
        "(compacting gives back at least that)",
        f"compacting needs {size_text(space.needed)} free on the disk of {path.parent} for a packed copy "
        f"of the database and its -wal file: {size_text(space.disk_free)} free",
    ]
    if not space.enough_room:
        lines.append("not enough to compact now: free some space first")
    return lines


def _print_json(
    path: Path, before: int, after: int, reclaimable: int, seconds: float, wal_emptied: bool | None
) -> None:
    """The report as JSON; `wal_emptied` None for a dry run."""
    fields = {
        "path": str(path),
        "bytes_before": before,
        "bytes_after": after,
        "reclaimable_bytes": reclaimable,
        "seconds": round(seconds, 3),
        "dry_run": wal_emptied is None,
        "wal_emptied": wal_emptied,
    }
    click.echo(json.dumps(fields, ensure_ascii=False, indent=2))


async def _compacted(path: Path, busy_timeout_ms: int) -> Compacted:
    """`compact` in a thread. Ctrl-C (or SIGTERM, from a service manager) stops the VACUUM at its
    next step, rolled back, and ends the command once it has; the last step (copying the packed pages
    back) cannot be stopped: a Ctrl-C during it is answered with the result, since the database was
    compacted."""
    stop = threading.Event()
    work = asyncio.ensure_future(asyncio.to_thread(compact, path, busy_timeout_ms, stop))
    with sigterm_as_ctrl_c():
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            stop.set()
            try:
                done = await work
            except CompactStopped:
                raise asyncio.CancelledError from None
            click.echo("Ctrl-C came during the last step of the VACUUM, which runs to its end:", err=True)
            return done


@click.command("compact")
@click.option("--dry-run", is_flag=True, help="Print the sizes and the free disk it needs; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@runtime_options
@async_command
async def compact_command(
    dry_run: bool, as_json: bool, config_path: Path | None, data_dir: Path | None
) -> None:
    """Rewrite the database file without its free pages (SQLite's VACUUM), giving back to the disk the
    space deleted memory left in it.

    The bot and every other process writing the database (`qunyi web`, `qunyi mcp --write`, an import)
    must be stopped, and the database's disk needs about twice what the database holds free. Ctrl-C
    stops it, leaving the database as it was."""
    settings = open_config(config_path).current
    busy_timeout_ms = settings.storage.busy_timeout_ms
    directory = resolve_data_dir(settings, data_dir)
    path = directory / DB_FILENAME
    hint = command_hint(["compact"], config_path, data_dir)
    if dry_run:
        db = await open_database(settings, directory, create=False, writes=False, upgrade=False)
        await db.close()
        started = time.monotonic()
        space = await asyncio.to_thread(measure, path, busy_timeout_ms)
        seconds = time.monotonic() - started
        if as_json:
            _print_json(path, space.file_bytes, space.file_bytes, space.reclaimable, seconds, None)
            return
        for line in _space_lines(path, space):
            click.echo(line)
        found = holder(directory)
        if found is not None:
            click.echo(_taken(directory, found, hint))
        others = [w for w in writers(directory) if found is None or w.pid != found.pid]
        if others:
            click.echo(_writing(directory, others, hint))
        click.echo("nothing changed (--dry-run)")
        return
    with database_errors():  # before taking the data directory, which may not be there either
        require_database_file(path)
    try:
        with hold(directory, COMPACT), excluding_writers(directory):
            # An upgrade the schema is due for is made now, with the data directory held alone already.
            with database_errors():
                db = await Database.open(directory, busy_timeout_ms, create=False)
            await db.close()
            done = await _compacted(path, busy_timeout_ms)
    except DataDirTaken as exc:
        raise click.ClickException(_taken(directory, exc.holder, hint)) from None
    except WritersRunning as exc:
        raise click.ClickException(_writing(directory, exc.writers, hint)) from None
    except NotEnoughSpace as exc:
        raise click.ClickException(
            f"not enough free disk space to compact {path}: it needs {size_text(exc.needed)} free in "
            f"{exc.folder} for a packed copy of the database and its -wal file, and {size_text(exc.free)} "
            "is free; nothing was changed"
        ) from None
    except DatabaseLocked as exc:
        raise click.ClickException(
            f"{exc}: another process is writing to it; nothing was changed, run `{hint}` again when it is "
            "done"
        ) from None
    except DatabaseWriteFailed as exc:
        raise click.ClickException(f"{exc}; nothing was changed (the database is as it was)") from None
    except OSError as exc:  # the pid file cannot be written: neither can the temporary copy
        reason = exc.strerror or str(exc)
        raise click.ClickException(f"cannot compact {path}: {reason}; nothing was changed") from None
    before = done.before.file_bytes
    if as_json:
        _print_json(path, before, done.bytes_after, done.before.reclaimable, done.seconds, done.wal_emptied)
        return
    if not done.wal_emptied:
        click.echo(
            f"compacted {path} in {done.seconds:.1f} s, but another process (a `qunyi backup`, the admin "
            "console) was still reading it, so the packed database waits in its -wal file: "
            f"{size_text(before)} → {size_text(done.bytes_after)} on disk for now; it shrinks once that "
            f"process is done with the database (or run `{hint}` again then)"
        )
        return
    given_back = max(0, before - done.bytes_after)
    click.echo(
        f"compacted {path}: {size_text(before)} → {size_text(done.bytes_after)} "
        f"({size_text(given_back)} given back) in {done.seconds:.1f} s"
    )


COMMANDS = [compact_command]
