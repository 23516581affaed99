"""`qunyi notes …`: the bot's notes for a chat (or the global scope), for admins."""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import IO, Any

import click

from bot.app import resolve_data_dir, settle_notes_folders
from bot.cli.options import find_chat, open_config, open_database, run_async, runtime_options
from memory.notes import NOTES_FOLDER, InvalidNoteName, NoteError, NoteScopes, NoteStore
from memory.service import MemoryService

GLOBAL = "global"


async def _store(config_path: Path | None, data_dir: Path | None, chat: str, create: bool) -> NoteStore:
    """The notes of `--chat`: a chat found in the database (under the key the bot reads), or the global
    scope. Only `set` passes `create=True`: the others read or change notes that must already be
    there, so a missing database is an error."""
    settings = open_config(config_path).current
    directory = resolve_data_dir(settings, data_dir)
    scopes = NoteScopes(directory / NOTES_FOLDER)
    db = await open_database(settings, directory, create=create, writes=False)  # notes are files
    try:
        await settle_notes_folders(db, scopes)
        if chat == GLOBAL:
            return scopes.global_scope()
        found = await find_chat(MemoryService(db), chat, directory)
    finally:
        await db.close()
    return scopes.for_chat(found.key)


def _run(
    action: Callable[[NoteStore], Coroutine[Any, Any, Any]],
    config_path: Path | None,
    data_dir: Path | None,
    chat: str,
    *,
    create: bool,
) -> Any:
    async def run() -> Any:
        return await action(await _store(config_path, data_dir, chat, create))

    try:
        return run_async(run())
    except (InvalidNoteName, NoteError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:  # a broken data directory: `notes` a file, a folder that may not be written
        raise click.ClickException(
            f"the notes folder cannot be used: {exc.strerror}: {exc.filename}"
        ) from None


def _read_text(source: IO[bytes], where: str) -> str:
    """The UTF-8 text of `source`; anything else is refused (a note must survive being written back)."""
    data = source.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise click.ClickException(
            f"{where} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); nothing changed"
        ) from None


chat_option = click.option(
    "--chat",
    required=True,
    help=f"Chat as platform:id (e.g. replay:g1) or its id alone, or '{GLOBAL}' for global notes.",
)


@click.group("notes")
def notes_group() -> None:
    """The bot's own notes (markdown with [[links]])."""


@notes_group.command("list")
@chat_option
@runtime_options
def list_command(chat: str, config_path: Path | None, data_dir: Path | None) -> None:
    """List note names."""
    for name in _run(lambda s: s.list(), config_path, data_dir, chat, create=False):
        click.echo(name)


@notes_group.command("get")
@click.argument("name")
@click.option("--depth", default=0, show_default=True, help="Expand ![[embeds]] to this depth.")
@chat_option
@runtime_options
def get_command(name: str, depth: int, chat: str, config_path: Path | None, data_dir: Path | None) -> None:
    """Print a note."""
    text = _run(lambda s: s.get(name, depth), config_path, data_dir, chat, create=False)
    if text is None:
        raise click.ClickException(f"no note named {name!r}")
    click.echo(text)


@notes_group.command("set")
@click.argument("name")
@click.option(
    "--file",
    "source",
    type=click.File("rb"),
    default=None,
    help="Read content from a file (default: stdin).",
)
@chat_option
@runtime_options
def set_command(
    name: str, source: IO[bytes] | None, chat: str, config_path: Path | None, data_dir: Path | None
) -> None:
    """Create or replace a note."""
    if source is None:
        content = _read_text(sys.stdin.buffer, "standard input")
    else:
        content = _read_text(source, source.name)
    created = _run(lambda s: s.set(name, content), config_path, data_dir, chat, create=True)
    click.echo(("created " if created else "replaced ") + name)


@notes_group.command("rename")
@click.argument("old")
@click.argument("new")
@chat_option
@runtime_options
def rename_command(old: str, new: str, chat: str, config_path: Path | None, data_dir: Path | None) -> None:
    """Rename a note, rewriting every link to it; merges into NEW when it exists."""
    result = _run(lambda s: s.rename(old, new), config_path, data_dir, chat, create=False)
    where = f" ({', '.join(result.rewritten)})" if result.rewritten else ""
    click.echo(
        f"{'merged' if result.merged else 'renamed'} {old} → {new}; "
        f"links rewritten in {len(result.rewritten)} notes{where}"
    )


@notes_group.command("delete")
@click.argument("name")
@chat_option
@runtime_options
def delete_command(name: str, chat: str, config_path: Path | None, data_dir: Path | None) -> None:
    """Delete a note."""
    if not _run(lambda s: s.delete(name), config_path, data_dir, chat, create=False):
        raise click.ClickException(f"no note named {name!r}")
    click.echo(f"deleted {name}")


@notes_group.command("hints")
@click.option("-n", "count", default=10, show_default=True)
@chat_option
@runtime_options
def hints_command(count: int, chat: str, config_path: Path | None, data_dir: Path | None) -> None:
    """The notes of highest weight."""
    for score in _run(lambda s: s.hints(count), config_path, data_dir, chat, create=False):
        click.echo(f"{score.weight:8.3f}  {score.name}")


@notes_group.command("suggestions")
@click.option(
    "--threshold",
    default=0.01,
    show_default=True,
    help="Value (weight per character) below which a note is suggested for work.",
)
@click.option("--max", "max_notes", default=10, show_default=True)
@chat_option
@runtime_options
def suggestions_command(
    threshold: float, max_notes: int, chat: str, config_path: Path | None, data_dir: Path | None
) -> None:
    """Notes of lowest value (weight per character), lowest first."""
    scores = _run(lambda s: s.suggestions(threshold, max_notes), config_path, data_dir, chat, create=False)
    for score in scores:
        click.echo(f"{score.value:10.6f}  {score.name}  (weight {score.weight:.3f}, {score.chars} chars)")


COMMANDS = [notes_group]
