"""How commands print: through rich without letting chat text act as markup (`[/]`) or emoji codes
(`:fire:`), sizes, commands to paste, and chats by their keys; and how they write an output file."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from adapters.importers import ImportIssue
from memory.atomic_write import write_atomically


def print_literal(console: Console, text: str, style: str = "") -> None:
    """Print `text` exactly as it is, in `style`: a rich Text is never parsed for markup or emoji, and
    a long line is not broken (a file path and its line number stay one line to copy)."""
    console.print(Text(text, style=style), soft_wrap=True)


def print_skipped(console: Console, issue: ImportIssue) -> None:
    """Report an entry that was not imported (its location and reason come from the file)."""
    print_literal(console, f"skipped {issue}", "yellow")


def write_output(path: Path, text: str) -> None:
    """Write a command's output file whole or not at all (`write_atomically`): a folder that is
    missing, a full disk or a refused write is a one-line error, and a file that was there before is
    left as it was."""
    try:
        write_atomically(path, text)
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror or exc}") from None


def size_text(size: int) -> str:
    """A size in bytes as a person reads it: bytes under a kilobyte, then kB, MB, GB and TB (decimal
    units)."""
    if size < 1000:
        return f"{size:,} bytes"
    for unit, scale in (("kB", 10**3), ("MB", 10**6), ("GB", 10**9)):
        if size < 1000 * scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size / 10**12:,.1f} TB"


def command_hint(words: list[str], config_path: Path | None = None, data_dir: Path | None = None) -> str:
    """The command `qunyi WORDS…` quoted for a shell, with the `--config`/`--data-dir` given here."""
    words = ["qunyi", *words]
    if config_path is not None:
        words += ["--config", str(config_path)]
    if data_dir is not None:
        words += ["--data-dir", str(data_dir)]
    return shlex.join(words)


def chat_label(chat_id: int, keys: Mapping[int, str]) -> str:
    """How a chat is named in a command's output: its `platform:id` key from `keys`
    (`MemoryService.chat_keys`), or `chat <id>` for one no longer there."""
    return keys.get(chat_id, f"chat {chat_id}")
