"""Options every command takes (`--config`, `--data-dir`) and loading what they point at."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from bot.app import App, build_app, recall_asks_model, resolve_data_dir, set_log_level
from bot.config import ConfigError, ConfigStore, Settings
from bot.holder_file import DataDirTaken
from bot.pid_file import BOT, PLUGIN, refuse_running_bot
from bot.termination import on_sigterm
from bot.writers import writing
from memory.clock import Clock
from memory.service import ChatRef, MemoryService
from memory.storage import (
    Database,
    DatabaseBehind,
    DatabaseLocked,
    DatabaseMissing,
    DatabaseUnavailable,
    DatabaseWriteFailed,
)
from memory.storage.migrate import newest
from memory.storage.sql import MAX_INT

DEFAULT_CONFIG = Path("config.toml")
F = TypeVar("F", bound=Callable[..., Any])
# Numbers that reach the database: past MAX_INT SQLite cannot take them (an OverflowError traceback).
POSITIVE_INT = click.IntRange(1, MAX_INT)
COUNT = click.IntRange(0, MAX_INT)


DATA_DIR_HELP = "Where the database and notes live (default: [storage] data_dir of the config)."


def runtime_options(command: F, data_dir_help: str = DATA_DIR_HELP) -> F:
    """Add `--config PATH` and `--data-dir DIR` to a command."""
    command = click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help=data_dir_help,
    )(command)
    return click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Config file (default: ./config.toml if present, else built-in defaults).",
    )(command)


def runtime_options_with(data_dir_help: str) -> Callable[[F], F]:
    """`runtime_options` for a command whose `--data-dir` is not the data directory of the config (a
    bench or an eval on a folder of its own): `data_dir_help` says what it is instead."""

    def add(command: F) -> F:
        return runtime_options(command, data_dir_help)

    return add


def platform_name(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """`--platform` (a click callback): a non-empty name, every message of the log is recorded under it;
    without ':', which ends the platform in a chat's `platform:id` key (with one, `--chat` could never
    name the chats it made)."""
    if value is not None and not value.strip():
        raise click.BadParameter("must not be empty")
    if value is not None and ":" in value:
        raise click.BadParameter(
            f"{value!r} must not hold ':', which separates platform and id in platform:id"
        )
    return value


def open_config(config_path: Path | None) -> ConfigStore:
    """Load the config, turning any problem into a clean CLI error naming the key and line."""
    if config_path is None and DEFAULT_CONFIG.is_file():
        config_path = DEFAULT_CONFIG
    try:
        store = ConfigStore.load(config_path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    logging.basicConfig(
        level=store.current.logging.level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    set_log_level(store.current.logging.level)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    return store


def missing_database(directory: Path) -> str:
    """What to tell someone whose data directory has no database yet (or who mistyped --data-dir)."""
    return f"no database in {directory} (run `qunyi replay`/`qunyi run` first, or check --data-dir)"


def _schema_behind(error: DatabaseBehind) -> str:
    """Why a dry run cannot look at a database whose schema is older than this version's."""
    return (
        f"the database {error.path} is at schema revision {newest(error.current)}; this version of Qunyi "
        f"upgrades it to {newest(error.heads)} when the bot next starts (or when this command runs without "
        "--dry-run), and a dry run changes nothing, so it cannot preview on the old schema"
    )


def _compact_running(error: DataDirTaken) -> str:
    """What to tell someone whose writing command `qunyi compact` refused."""
    return (
        f"`qunyi {error.holder.role}` (pid {error.holder.shown_pid}) is rewriting the database in "
        f"{error.data_dir}; try again when it ends"
    )


@contextmanager
def database_errors() -> Iterator[None]:
    """Turn a database that is missing or cannot be opened (or, for a dry run, is behind this version's
    schema), or a data directory `qunyi compact` holds, into a one-line CLI error."""
    try:
        yield
    except DatabaseMissing as exc:
        raise click.ClickException(missing_database(exc.path.parent)) from None
    except DatabaseBehind as exc:
        raise click.ClickException(_schema_behind(exc)) from None
    except DatabaseUnavailable as exc:
        raise click.ClickException(f"cannot open the database {exc.path}: {exc.reason}") from None
    except DataDirTaken as exc:
        taken = _bot_running(exc) if exc.holder.role in (BOT, PLUGIN) else _compact_running(exc)
        raise click.ClickException(taken) from None


def _bot_running(error: DataDirTaken) -> str:
    """What to tell someone whose command would have upgraded the schema under a running bot."""
    return (
        f"a bot (pid {error.holder.shown_pid}) is running on {error.data_dir}, and its database's schema "
        "is older than this version's: that bot is of an older Qunyi (a bot upgrades the schema as it "
        "starts), which could not start again on the upgraded schema. Stop it, then start this version, "
        "which upgrades the schema; nothing was changed"
    )


def _command_name() -> str:
    """The command being run, as typed after `qunyi` (`people edit`), naming it to `qunyi compact`."""
    context = click.get_current_context()
    names: list[str] = []
    while context.parent is not None:
        names.append(context.info_name or "")
        context = context.parent
    return " ".join(reversed(names))


def _lock(directory: Path, writes: bool) -> AbstractContextManager[object] | None:
    return writing(directory, _command_name()) if writes else None


def _upgrade_lock(directory: Path, writes: bool, upgrade: bool) -> AbstractContextManager[object] | None:
    """What opening holds while it creates the database or upgrades its schema: a reader writes then, so
    it holds the data directory as writers do (refused while `qunyi compact` runs; a writer holds it
    already)."""
    return (
        _upgrading(directory, nullcontext() if writes else writing(directory, _command_name()))
        if upgrade
        else None
    )


@contextmanager
def _upgrading(directory: Path, hold: AbstractContextManager[object]) -> Iterator[None]:
    """`hold` for the block, once no bot is found running on `directory`. A bot upgrades the schema as
    it starts, so one running on a schema behind this version's is of an older Qunyi (updated in place
    under it): upgraded, the schema would be one that bot's code does not know, and it could not start
    again. Raises DataDirTaken naming the bot."""
    refuse_running_bot(directory)
    with hold:
        yield


async def open_app(
    config: ConfigStore,
    data_dir: Path | None,
    *,
    create: bool,
    writes: bool,
    upgrade: bool = True,
    clock: Clock | None = None,
    watch_config: bool = False,
    recalls: bool = False,
) -> App:
    """build_app for a command. Read-only commands pass `create=False`: a missing database is then
    an error instead of a new, empty one (a mistyped --data-dir must not look like an empty memory).
    A command that may write the database passes `writes=True`: it holds the data directory for writing
    (bot.writers) until the app closes, and is refused at once while `qunyi compact` runs. So does one
    that `recalls` when a recall may ask the model (its token usage is written): reading only, it would
    write usage rows into a database compact is rewriting. A reader holds it too while opening upgrades
    an old schema. A dry run passes `upgrade=False`: opening then changes nothing, and a schema behind
    this version's is refused."""
    directory = resolve_data_dir(config.current, data_dir)
    writes = writes or (recalls and recall_asks_model(config.current))
    with database_errors():
        return await build_app(
            config,
            directory,
            clock,
            watch_config,
            create=create,
            upgrade=upgrade,
            lock=_lock(directory, writes),
            upgrade_lock=_upgrade_lock(directory, writes, upgrade),
        )


async def open_database(
    settings: Settings, data_dir: Path | None, *, create: bool, writes: bool, upgrade: bool = True
) -> Database:
    """The database alone, for commands that need no App; `writes`, `upgrade` and errors as for open_app."""
    directory = resolve_data_dir(settings, data_dir)
    with database_errors():
        return await Database.open(
            directory,
            settings.storage.busy_timeout_ms,
            create=create,
            upgrade=upgrade,
            lock=_lock(directory, writes),
            upgrade_lock=_upgrade_lock(directory, writes, upgrade),
        )


async def find_chat(memory: MemoryService, key: str, data_dir: Path) -> ChatRef:
    """The chat `--chat` names (`platform:id`, or the id alone when only one platform has it)."""
    found = await memory.chats_matching(key)
    if len(found) != 1:
        raise click.ClickException(chat_not_found(key, found, f" in {data_dir}"))
    note_if_merged(found[0])
    return found[0]


def note_if_merged(chat: ChatRef) -> None:
    """Say on stderr when the key a command was given led to `chat` through a chat merge."""
    if chat.merged_from is not None:
        click.echo(f"note: {chat.merged_from} was merged into {chat.key}; using that", err=True)


def chat_not_found(key: str, found: list[ChatRef], where: str = "") -> str:
    """Why `key` names no single chat: none has it, or it is ambiguous (the candidates' keys listed)."""
    if found:
        keys = ", ".join(chat.key for chat in found)
        return f"{key!r} names several chats{where} ({keys}); use platform:id"
    return f"no chat {key!r}{where} (use platform:id, e.g. replay:g1)"


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """For the block (on a running loop), SIGTERM is taken as a Ctrl-C: the command is cancelled and
    its `finally` blocks run (the app closed, the LLM usage it holds written, its hold on the data
    directory let go) instead of the process dying at once; it then ends as terminated (exit code
    143, `bot.termination`). A service manager or an MCP client stops a command with SIGTERM."""
    loop = asyncio.get_running_loop()
    before = signal.getsignal(signal.SIGTERM)
    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    except RuntimeError:  # a loop outside the main thread (a command run by a test) gets no signals
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, before)  # removing it set the default, which kills at once


def run_async(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a command's coroutine; a database that stays locked or refuses a write ends it with a
    one-line error saying what became of the change. Every command runs through here, decorated
    (`async_command`) or not."""
    in_batches = _top_command() in _IN_BATCHES
    try:
        return asyncio.run(coroutine)
    except DatabaseLocked as exc:
        if in_batches:
            tail = f"try again {_BATCHES_STAY}"
        else:
            tail = "try again: nothing of the change that met the lock was made"
        raise click.ClickException(
            f"{exc}: another process (a running bot?) is writing to it; {tail}"
        ) from None
    except DatabaseWriteFailed as exc:
        if in_batches:
            tail = f"free space or fix the permissions and run it again {_BATCHES_STAY}"
        else:
            tail = (
                "nothing of the refused change was made: free space or fix the permissions and run it again"
            )
        raise click.ClickException(f"{exc}; {tail}") from None


# Commands writing in batches, each its own transaction: the batches finished before a refusal stay.
_IN_BATCHES = frozenset({"import", "replay"})
_BATCHES_STAY = "(whatever was written before stays, and importing or replaying again adds only the rest)"


def _top_command() -> str | None:
    """The name of the `qunyi` command running (`jargon` for `qunyi jargon import`), if run by click."""
    context = click.get_current_context(silent=True)
    while context is not None and context.parent is not None and context.parent.parent is not None:
        context = context.parent
    return context.info_name if context is not None and context.parent is not None else None


def async_command(function: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    """Run an async command (through `run_async`)."""

    @wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return run_async(function(*args, **kwargs))

    return wrapper
