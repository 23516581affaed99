"""`qunyi import FORMAT FILE`: backfill memory from a chat export through the batch path."""

from __future__ import annotations

from datetime import datetime
from itertools import chain, islice
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from adapters.importers import FORMATS, ImportFileError, ImportIssue, IssueKind, iter_import
from adapters.importers.base import id_clash
from bot.cli.options import async_command, open_app, open_config, platform_name, runtime_options
from bot.cli.printing import print_skipped
from memory.types import ChatMessage

BATCH = 2000


def _options(
    fmt: str, bot_id: str, chat_id: str | None, tz: str | None, platform: str | None, progress: Any
) -> dict[str, Any]:
    options: dict[str, Any] = {"progress": progress}
    if platform is not None:
        options["platform"] = platform
    zone = None
    if tz:
        try:
            zone = ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError, OSError):  # ValueError: a path, or a file not TZif
            raise click.ClickException(
                f"unknown time zone {tz!r} (use an IANA name such as Asia/Shanghai)"
            ) from None
    if fmt in {"telegram", "discord"}:
        options["bot_id"] = bot_id
    if fmt == "qq":
        options.update(self_id=bot_id, chat_id=chat_id)
    if fmt == "replay":
        options["default_tz"] = zone
    elif fmt in {"telegram", "qq"} and zone is not None:
        options["tz"] = zone
    return options


@click.command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(sorted(FORMATS)))
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--chat-id", default=None, help="qq: the group number for a text export without one.")
@click.option("--tz", default=None, help="Time zone for times without an offset (e.g. Asia/Shanghai).")
@click.option(
    "--platform",
    default=None,
    callback=platform_name,
    help="replay: the platform name recorded for the log (default replay).",
)
@click.option(
    "--catch-up-rounds",
    type=click.IntRange(0, 1000),
    default=3,
    show_default=True,
    help="Runs of every daemon after the import (0–1000).",
)
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@runtime_options
@async_command
async def import_command(
    fmt: str,
    file: Path,
    chat_id: str | None,
    tz: str | None,
    platform: str | None,
    catch_up_rounds: int,
    no_progress: bool,
    config_path: Path | None,
    data_dir: Path | None,
) -> None:
    """Import a chat export (telegram result.json, DiscordChatExporter JSON, QQ JSON/txt, replay JSONL).

    Idempotent: importing the same file twice adds nothing."""
    if platform is not None and fmt != "replay":
        raise click.UsageError("--platform is for the replay format (the other exports name their platform)")
    console = Console()
    config = open_config(config_path)
    progress = Progress(
        TextColumn(f"importing {fmt}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=no_progress,
    )
    bar = progress.add_task("import", total=None)

    def advance(done: int, total: int) -> None:
        progress.update(bar, completed=done, total=total)

    options = _options(fmt, config.current.bot.self_id, chat_id, tz, platform, advance)
    items = iter_import(fmt, file, **options)
    try:  # a file that is no such export is refused before a database is made for it
        first = list(islice(items, 1))
    except ImportFileError as exc:
        raise click.ClickException(str(exc)) from None
    app = await open_app(config, data_dir, create=True, writes=True)
    created = duplicates = erased = malformed = skipped = 0
    try:
        with progress:
            rest = chain(first, items)
            while chunk := list(islice(rest, BATCH)):
                messages = [item for item in chunk if isinstance(item, ChatMessage)]
                for issue in (item for item in chunk if isinstance(item, ImportIssue)):
                    if issue.kind is IssueKind.MALFORMED:
                        malformed += 1
                        print_skipped(progress.console, issue)
                    else:
                        skipped += 1
                report = await app.memory.record_many(messages)
                created += report.created
                for clash in report.clashes:
                    malformed += 1
                    print_skipped(progress.console, id_clash(str(file), clash))
                duplicates += report.duplicates
                erased += report.erased
        for _ in range(max(catch_up_rounds, 0)):
            await app.runner.run_all()
    except ImportFileError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        await app.close()
    console.print(
        f"{created} messages imported, {duplicates} already known, {malformed} malformed entries skipped, "
        f"{skipped} non-messages (joins, pins, empty) passed over; "
        + (f"{erased} messages of people who had them deleted passed over; " if erased else "")
        + f"finished {datetime.now():%H:%M:%S}"
    )


COMMANDS = [import_command]
