"""`qunyi bench`: throughput and latency of the live pipeline on a generated log."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bot.bench import bench_database, run_bench
from bot.cli.options import async_command, database_errors, open_config, runtime_options_with

# A typo's extra zeros would otherwise run for days (the replay takes tens of messages a second).
MAX_MESSAGES = 1_000_000
MAX_CHATS = 1_000


@click.command("bench")
@click.option("--messages", default=10_000, show_default=True, type=click.IntRange(1, MAX_MESSAGES))
@click.option("--chats", default=3, show_default=True, type=click.IntRange(1, MAX_CHATS))
@click.option("--seed", default=7, show_default=True)
@click.option(
    "--import",
    "importing",
    is_flag=True,
    help="Import the log as `qunyi import replay` does (batches, then the jobs' catch-up), not replay it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@runtime_options_with(
    "Keep the generated log and the database here, a folder holding no database yet (default: a "
    "temporary folder, removed afterwards)."
)
@async_command
async def bench_command(
    messages: int,
    chats: int,
    seed: int,
    importing: bool,
    as_json: bool,
    config_path: Path | None,
    data_dir: Path | None,
) -> None:
    """Replay a generated log (daemons in simulated time), or import it (--import), then time recall and
    context building.

    Uses a temporary folder unless --data-dir keeps the log and database there; that folder must not
    hold a database yet (a second run would only meet duplicates and measure nothing)."""
    config = open_config(config_path)
    if data_dir is not None and bench_database(data_dir).exists():
        raise click.ClickException(
            f"{data_dir} already holds a database; the bench needs a new folder (or none: a temporary one)"
        )
    with database_errors():
        try:
            report = await run_bench(config, messages, chats, seed, data_dir, importing)
        except OSError as exc:  # --data-dir names a file, or a folder that cannot be written
            reason = exc.strerror or str(exc)
            raise click.ClickException(f"cannot use {data_dir} for the bench: {reason}") from None
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=False, indent=2))
        return
    for key, value in report.items():
        click.echo(f"{key:22} {value}")


COMMANDS = [bench_command]
