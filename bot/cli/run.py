"""`qunyi run` (the bot on the console adapter), `qunyi replay FILE`, `qunyi reload`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from datetime import timedelta
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from adapters.base import Adapter
from adapters.console import ConsoleAdapter
from bot.adapters_factory import build_adapters
from bot.app import resolve_data_dir
from bot.cli.options import async_command, open_app, open_config, runtime_options
from bot.cli.printing import print_literal, print_skipped
from bot.replay import count_lines, replay, replay_clock
from bot.summary import summarize
from memory.types import ChatMessage

PID_FILE = "qunyi.pid"


@click.command("run")
@runtime_options
@async_command
async def run_command(config_path: Path | None, data_dir: Path | None) -> None:
    """Start the bot with its daemons on the adapters `[adapters] enabled` names (default: console)."""
    config = open_config(config_path)
    app = await open_app(config, data_dir, create=True, watch_config=True)
    adapters = build_adapters(app)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, config.reload)
    pid_file = app.data_dir / PID_FILE
    pid_file.write_text(str(os.getpid()))
    app.runner.start()
    waits = [asyncio.create_task(stop.wait())]
    try:
        for adapter in adapters:

            async def on_message(message: ChatMessage, adapter: Adapter = adapter) -> None:
                try:
                    await app.pipeline.handle(message, adapter.send_text)
                except Exception:
                    logging.getLogger(__name__).exception("handling a %s message failed", adapter.platform)

            await adapter.start(on_message)
            if isinstance(adapter, ConsoleAdapter):
                waits.append(asyncio.create_task(adapter.finished.wait()))
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in waits:
            task.cancel()
        for adapter in adapters:
            with contextlib.suppress(Exception):
                await adapter.stop()
        await app.close()
        with contextlib.suppress(FileNotFoundError):
            pid_file.unlink()


@click.command("replay")
@click.argument("log", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--platform", default="replay", show_default=True, help="Platform name recorded for the log.")
@click.option(
    "--settle-minutes", default=60, show_default=True, help="Simulated time the daemons run after the log."
)
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@runtime_options
@async_command
async def replay_command(
    log: Path,
    platform: str,
    settle_minutes: int,
    no_progress: bool,
    config_path: Path | None,
    data_dir: Path | None,
) -> None:
    """Feed a JSONL chat log through the live pipeline, daemons firing in simulated time."""
    console = Console(stderr=False)
    config = open_config(config_path)
    clock = replay_clock()
    app = await open_app(config, data_dir, create=True, clock=clock)
    total = count_lines(log)
    progress = Progress(
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=no_progress,
    )
    try:
        with progress:
            bar = progress.add_task("replay", total=total)
            report = await replay(
                app,
                clock,
                log,
                platform,
                timedelta(minutes=settle_minutes),
                on_progress=lambda: progress.advance(bar),
                on_problem=lambda p: print_skipped(progress.console, p),
            )
        console.print(
            f"[bold]{report.recorded}[/bold] messages recorded, {report.duplicates} already known, "
            f"{len(report.problems)} lines skipped, {len(report.replies)} bot replies; "
            f"jobs run: {', '.join(f'{k}×{v}' for k, v in sorted(report.job_runs.items())) or 'none'}"
        )
        for summary in await summarize(app.memory):
            console.rule(Text(summary.title, style="rule.text"))
            for title, lines in summary.sections:
                print_literal(console, title, "bold")
                for line in lines:
                    print_literal(console, f"  {line}")
    finally:
        await app.close()


@click.command("reload")
@runtime_options
def reload_command(config_path: Path | None, data_dir: Path | None) -> None:
    """Check the config and tell the running bot to reload it (SIGHUP)."""
    config = open_config(config_path)
    pid_file = resolve_data_dir(config.current, data_dir) / PID_FILE
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        raise click.ClickException(f"config is valid, but no running bot was found ({pid_file})") from None
    try:
        os.kill(pid, signal.SIGHUP)
    except ProcessLookupError:
        raise click.ClickException(f"config is valid, but the bot (pid {pid}) is not running") from None
    click.echo(f"config is valid; asked the bot (pid {pid}) to reload")


COMMANDS = [run_command, replay_command, reload_command]
