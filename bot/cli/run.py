"""`qunyi run` (the bot on the console adapter), `qunyi replay FILE`, `qunyi reload`."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from adapters.base import Adapter, MessageHandler, unless_set
from adapters.console import ConsoleAdapter
from bot.adapters_factory import build_adapters
from bot.app import App, load_text_tables, resolve_data_dir
from bot.cli.options import async_command, open_app, open_config, platform_name, runtime_options
from bot.cli.printing import print_literal, print_skipped
from bot.config import ConfigStore
from bot.early_stop import sigterm_noted
from bot.inbound import inbound_handler
from bot.pid_file import BOT, COMPACT, PID_FILE, PLUGIN, DataDirTaken, Holder, hold, holder, running_bot
from bot.reload_answer import await_answer, reload_and_answer
from bot.replay import count_lines, replay, replay_clock
from bot.responding import Responses
from bot.stopping import stop_serving
from bot.summary import summarize
from bot.unrecorded import record_kept

log = logging.getLogger(__name__)
RELOAD_ANSWER_SECONDS = 15.0
MAX_SETTLE_MINUTES = 7 * 24 * 60  # replay steps the daemons every 5 simulated minutes: a week is ~2000 steps


@contextlib.contextmanager
def pid_lock(data_dir: Path) -> Iterator[None]:
    """Hold `<data_dir>/qunyi.pid` (our pid, locked) while the bot runs; removed at the end.

    A second bot on the same data directory is refused instead of overwriting the file (and removing
    it when it stops, which left `qunyi reload` unable to find the bot still running), and so is a bot
    started while `qunyi compact` rewrites the database."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(hold(data_dir, BOT))
        except DataDirTaken as exc:
            raise click.ClickException(_taken(data_dir, exc.holder)) from None
        yield


def _taken(data_dir: Path, found: Holder) -> str:
    if found.role == COMPACT:
        return (
            f"`qunyi compact` (pid {found.shown_pid}) is compacting the database in {data_dir}; start the "
            "bot when it is done"
        )
    return f"another bot (pid {found.shown_pid}) is already running on {data_dir}; stop it first"


@click.command("run")
@runtime_options
@async_command
async def run_command(config_path: Path | None, data_dir: Path | None) -> None:
    """Start the bot with its daemons on the adapters `[adapters] enabled` names (default: console)."""
    config = open_config(config_path)
    if _stopped_early():  # before the database is opened (or made, in a new data directory)
        return
    app = await open_app(config, data_dir, create=True, writes=True, watch_config=True)
    adapters = build_adapters(app)
    try:
        with pid_lock(app.data_dir):
            await record_kept(app.memory, app.data_dir)
            await app.llm.ledger.write_held()  # usage an earlier run kept on disk (bot.llm.usage_spill)
            await _serve(app, config, adapters)
    finally:
        await app.close()


def prepare_process() -> None:
    """Before the jobs and adapters start: load the text tables, then take everything alive by now
    (modules, those tables, the app; some 380,000 objects that live as long as the process) out of
    the garbage collector's reach. A full collection walks every object it tracks while holding the
    GIL: 0.2-0.3 s in which no thread runs, the event loop included, whichever thread's allocations
    set it off (a jargon mining or consolidation worker on a long message)."""
    load_text_tables()
    gc.freeze()


async def _serve(app: App, config: ConfigStore, adapters: list[Adapter]) -> None:
    """Run the jobs and the adapters until a signal, or the console's end of input."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, reload_and_answer, app)
    # Checked after the handlers are set: a SIGTERM now reaches `stop` instead. One that came while
    # the database opened is heeded only now: an upgrade of its schema is not broken off half-way.
    if _stopped_early():
        return
    await asyncio.to_thread(prepare_process)
    app.runner.start()
    responses = Responses()
    waits = [asyncio.create_task(stop.wait())]
    try:
        for adapter in adapters:
            if not await _started(adapter, inbound_handler(app, adapter, stop, responses), stop):
                break
            if isinstance(adapter, ConsoleAdapter):
                waits.append(asyncio.create_task(adapter.finished.wait()))
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if not stop.is_set() and not sys.stdin.isatty():
            log.warning(
                "the console adapter's input ended (no terminal, as under a service manager): the bot "
                "stops; a bot serving a platform leaves console out of [adapters] enabled"
            )
    finally:
        for task in waits:
            task.cancel()
        await stop_serving(app, responses, adapters)


def _stopped_early() -> bool:
    """Whether a SIGTERM came while the bot was starting (`bot.early_stop`); if so, says so in the log."""
    if not sigterm_noted():
        return False
    log.warning("stopped: SIGTERM came while the bot was starting")
    return True


async def _started(adapter: Adapter, handler: MessageHandler, stop: asyncio.Event) -> bool:
    """Start `adapter`; False when a signal came first. A start can wait long on its platform (Telegram's
    getMe on an API that does not answer, Discord's ready): SIGTERM or Ctrl+C then went unheeded until
    it timed out (a minute) and the bot ended saying the adapter could not start."""
    starting = asyncio.ensure_future(adapter.start(handler))
    if not await unless_set(starting, stop):
        log.warning("stopped while the %s adapter was starting", adapter.platform)
        return False
    try:
        starting.result()
    except Exception as exc:
        log.debug("starting %s failed", adapter.platform, exc_info=True)
        raise click.ClickException(f"cannot start the {adapter.platform} adapter: {exc}") from None
    return True


@click.command("replay")
@click.argument("log", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--platform",
    default="replay",
    show_default=True,
    callback=platform_name,
    help="Platform name recorded for the log.",
)
@click.option(
    "--settle-minutes",
    default=60,
    show_default=True,
    type=click.IntRange(0, MAX_SETTLE_MINUTES),
    help="Simulated time the daemons run after the log (at most a week).",
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
    app = await open_app(config, data_dir, create=True, writes=True, clock=clock)
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
            + (f"{report.erased} of people who had them deleted passed over, " if report.erased else "")
            + f"{len(report.problems)} lines skipped, {len(report.replies)} bot replies; "
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
    directory = resolve_data_dir(config.current, data_dir)
    found = holder(directory)
    if found is not None and found.role == PLUGIN:
        raise click.ClickException(
            f"config is valid, but the bot (pid {found.shown_pid}) runs inside another program, which is not "
            "sent signals: it reloads its config file when the file changes ([scheduler] "
            "config_watch_seconds), or when the program calls QunyiPlugin.reload()"
        )
    pid = running_bot(directory)
    if pid is None:
        raise click.ClickException(f"config is valid, but no running bot was found ({directory / PID_FILE})")
    asked = time.time()
    try:
        os.kill(pid, signal.SIGHUP)
    except ProcessLookupError:
        raise click.ClickException(f"config is valid, but the bot (pid {pid}) is not running") from None
    except OSError as exc:  # e.g. the bot runs as another user
        raise click.ClickException(f"cannot signal the bot (pid {pid}): {exc.strerror or exc}") from None
    click.echo(f"config is valid; asked the bot (pid {pid}) to reload")
    # The bot reads its own file with its own environment: its answer, not this check, is the outcome.
    answer = await_answer(directory, pid, asked, RELOAD_ANSWER_SECONDS)
    if answer is None:
        raise click.ClickException(
            f"the bot (pid {pid}) did not answer within {RELOAD_ANSWER_SECONDS:.0f} s; "
            "its log says how the reload went"
        )
    if not answer.ok:
        raise click.ClickException(
            f"the bot rejected the reload, its settings stay in force: {answer.message}"
        )
    click.echo(f"the bot {answer.message}")


COMMANDS = [run_command, replay_command, reload_command]
