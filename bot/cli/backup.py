"""`qunyi backup DEST [--json]`: copy the data directory (database and notes) into a new folder while the
bot keeps running; the folder is itself a data directory (`--data-dir DEST`)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import click

from bot.app import resolve_data_dir
from bot.backup import BackupFailed, back_up
from bot.cli.options import async_command, database_errors, open_config, runtime_options
from bot.cli.printing import size_text


@click.command("backup")
@click.argument("destination", metavar="DEST", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@runtime_options
@async_command
async def backup_command(
    destination: Path, as_json: bool, config_path: Path | None, data_dir: Path | None
) -> None:
    """Copy the database and the notes into DEST, a new (or empty) folder, safely while the bot runs.

    DEST is a data directory of its own: look at it with `--data-dir DEST`; to restore, stop the bot and
    run it with `--data-dir DEST` (or put DEST where the data directory was). Ctrl-C stops it and
    leaves no backup."""
    settings = open_config(config_path).current
    directory = resolve_data_dir(settings, data_dir)
    stop = threading.Event()
    with database_errors():
        try:
            done = await asyncio.to_thread(
                back_up, directory, destination, settings.storage.busy_timeout_ms, stop
            )
        except BackupFailed as exc:
            raise click.ClickException(str(exc)) from None
        except asyncio.CancelledError:  # Ctrl-C: the copy stops at its next step and leaves nothing
            stop.set()
            raise
    if as_json:
        fields = {
            "path": str(done.folder),
            "database_bytes": done.database.size_bytes,
            "chats": done.database.chats,
            "messages": done.database.messages,
            "notes": done.notes,
        }
        click.echo(json.dumps(fields, ensure_ascii=False, indent=2))
        return
    held = done.database
    click.echo(
        f"backed up {directory} to {done.folder}: messages {held.messages}, chats {held.chats}, "
        f"notes {done.notes}, database {size_text(held.size_bytes)}"
    )


COMMANDS = [backup_command]
