"""Options every command takes (`--config`, `--data-dir`) and loading what they point at."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from bot.config import ConfigError, ConfigStore

DEFAULT_CONFIG = Path("config.toml")
F = TypeVar("F", bound=Callable[..., Any])


def runtime_options(command: F) -> F:
    """Add `--config PATH` and `--data-dir DIR` to a command."""
    command = click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Where the database and notes live (default: [storage] data_dir of the config).",
    )(command)
    return click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Config file (default: ./config.toml if present, else built-in defaults).",
    )(command)


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
    logging.getLogger("alembic").setLevel(logging.WARNING)
    return store


def run_async(coroutine: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coroutine)


def async_command(function: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    @wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return run_async(function(*args, **kwargs))

    return wrapper
