"""`qunyi import FORMAT FILE`: backfill memory from a chat export through the batch path."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import datetime
from itertools import chain, islice
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from adapters.importers import FORMATS, ImportFileError, iter_import
from bot.cli.options import async_command, open_app, open_config, platform_name, runtime_options
from bot.cli.printing import print_literal, print_skipped
from bot.importing import record_import


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
    if chat_id is not None and fmt != "qq":
        raise click.UsageError(f"--chat-id is for the qq format (a {fmt} export names its chats)")
    console = Console()
    config = open_config(config_path)
    progress = Progress(
        TextColumn(f"importing {fmt}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
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
    try:
        with progress:
            totals = await record_import(
                app, chain(first, items), str(file), lambda issue: print_skipped(progress.console, issue)
            )
        for round_ in range(1, catch_up_rounds + 1):
            # The jobs' catch-up can take as long as the import: say what is running meanwhile.
            said = f"background jobs catching up, round {round_} of {catch_up_rounds}"
            with nullcontext() if no_progress else console.status(said):
                await app.runner.run_all()
    except ImportFileError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        await app.close()
    console.print(
        f"{totals.created} messages imported, {totals.duplicates} already known, "
        f"{totals.malformed} malformed entries skipped, "
        f"{totals.skipped} non-messages (joins, pins, empty) passed over; "
        + (f"{totals.erased} messages of people who had them deleted passed over; " if totals.erased else "")
        + (f"{totals.memberships} members leaving or joining read; " if totals.memberships else "")
        + f"finished {datetime.now():%H:%M:%S}"
    )
    for key in totals.kept_as_group:
        print_literal(
            console,
            f"warning: chat {key} stays a group chat: memory already held it as a group (from an earlier "
            "import or the bot itself, which cannot be told apart), while this export says it is a private "
            "chat. Its messages are all kept; the bot answers there only when addressed, as in a group.",
            "yellow",
        )


COMMANDS = [import_command]
