"""`qunyi jargon …`: review the jargon dictionary (list, show, approve, reject, edit, delete,
import, export). Every command calls the same service functions as the job and the web console."""

from __future__ import annotations

import getpass
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from bot.cli.options import (
    COUNT,
    POSITIVE_INT,
    chat_not_found,
    note_if_merged,
    open_config,
    open_database,
    run_async,
    runtime_options,
)
from bot.cli.printing import chat_label, write_output
from memory.context.render import forward_marked, one_line
from memory.jargon import dictionary, transfer
from memory.jargon.dictionary import Decision, EntryView, JargonError
from memory.models.jargon import STATUSES
from memory.service import MemoryService
from memory.text import truncate
from memory.text.saved import UndecodableText, decode_saved

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
GLOBAL = "global"


async def _with_memory(
    config_path: Path | None,
    data_dir: Path | None,
    action: Callable[[MemoryService], Awaitable[T]],
    create: bool,
    writes: bool,
) -> T:
    db = await open_database(open_config(config_path).current, data_dir, create=create, writes=writes)
    try:
        return await action(MemoryService(db))
    finally:
        await db.close()


def _run(
    config_path: Path | None,
    data_dir: Path | None,
    action: Callable[[MemoryService], Awaitable[T]],
    *,
    create: bool,
    writes: bool,
) -> T:
    """Run `action` on the database. Only an import may make a new one (`create=True`): the other
    commands show or change entries that must already be there, so no database is an error. Those that
    change entries pass `writes` (options.open_database)."""
    try:
        return run_async(_with_memory(config_path, data_dir, action, create, writes))
    except JargonError as exc:
        raise click.ClickException(str(exc)) from None


async def _chat_id(memory: MemoryService, key: str | None) -> int | None:
    """None for no chat / 'global'; else the chat's database id (a clear error when unknown)."""
    if key is None or key == GLOBAL:
        return None
    found = await memory.chats_matching(key)
    if len(found) != 1:
        raise JargonError(chat_not_found(key, found))
    note_if_merged(found[0])
    return found[0].id


Listed = tuple[list[EntryView], dict[int, str]]
"""Entries, and the `platform:id` key of each chat they belong to."""


async def _listed(memory: MemoryService, entries: list[EntryView]) -> Listed:
    return entries, await memory.chat_keys(e.chat_id for e in entries if e.chat_id is not None)


def _line(e: EntryView, keys: dict[int, str]) -> str:
    flag = {True: "jargon", False: "ordinary", None: "?"}[e.is_jargon]
    scope = "global" if e.chat_id is None else chat_label(e.chat_id, keys)
    if e.shared_id is not None:
        scope += f", beside global {e.shared_id}"
    meaning = truncate(e.meaning, 60) if e.meaning else "—"
    return f"{e.id:>6}  {e.content}  ×{e.count}  [{e.status}/{e.provenance}/{flag}] ({scope})  {meaning}"


def _actor(by: str | None) -> str:
    return by or getpass.getuser() or "admin"


chat_option = click.option("--chat", default=None, help="Chat as platform:id, or its id alone.")
by_option = click.option("--by", default=None, help="Who decides (default: your login name).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")
status_option = click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(STATUSES),
    help="Only these statuses (repeatable).",
)
min_count_option = click.option(
    "--min-count", default=0, type=COUNT, help="Only entries counted at least this often."
)


def filter_options(command: F) -> F:
    """`--chat`, `--status`, `--min-count`: the filters of list and export."""
    return chat_option(status_option(min_count_option(command)))


@click.group("jargon")
def jargon_group() -> None:
    """Review the group-slang dictionary."""


@jargon_group.command("list")
@filter_options
@click.option("--search", default="", help="Only terms containing this text.")
@click.option("--limit", default=50, show_default=True, type=POSITIVE_INT)
@click.option("--offset", default=0, show_default=True, type=COUNT, help="Skip this many entries first.")
@json_option
@runtime_options
def list_command(
    chat: str | None,
    statuses: tuple[str, ...],
    min_count: int,
    search: str,
    limit: int,
    offset: int,
    as_json: bool,
    config_path: Path | None,
    data_dir: Path | None,
) -> None:
    """List entries, most counted first, a page at a time (`--limit` from `--offset`)."""

    async def action(memory: MemoryService) -> Listed:
        chat_id = await _chat_id(memory, chat)
        async with memory.db.read() as session:
            found = await dictionary.list_entries(
                session, chat_id, statuses, min_count, limit, offset, search=search
            )
        return await _listed(memory, found)

    entries, keys = _run(config_path, data_dir, action, create=False, writes=False)
    if as_json:
        click.echo(json.dumps([e.to_json() for e in entries], ensure_ascii=False, indent=2))
        return
    for entry in entries:
        click.echo(_line(entry, keys))
    if not entries:
        click.echo(f"no entries past the first {offset}" if offset else "no entries")


@jargon_group.command("show")
@click.argument("jargon_id", type=POSITIVE_INT)
@chat_option
@json_option
@runtime_options
def show_command(
    jargon_id: int, chat: str | None, as_json: bool, config_path: Path | None, data_dir: Path | None
) -> None:
    """One entry with its per-chat counts, evidence (read from the messages now) and review trail."""

    async def action(memory: MemoryService) -> tuple[dict[str, Any], dict[int, str]]:
        chat_id = await _chat_id(memory, chat)
        async with memory.db.read() as session:
            entry = await dictionary.get(session, jargon_id)
            if entry is None:
                raise JargonError(f"no jargon entry with id {jargon_id}")
            found = await dictionary.evidence(session, jargon_id, chat_id)
            counts = await dictionary.chat_counts(session, jargon_id)
            data: dict[str, Any] = {
                "entry": entry.to_json(),
                "chat_counts": counts,
                "evidence": [
                    {
                        "message_id": e.message.id,
                        "chat_id": e.message.chat_id,
                        "context": [
                            {
                                "id": m.id,
                                "speaker": m.speaker,
                                "text": m.text,
                                "is_bot": m.is_bot,
                                "forwarded": m.forwarded,
                            }
                            for m in e.context
                        ],
                    }
                    for e in found
                ],
                "reviews": await dictionary.reviews(session, jargon_id),
            }
        owner = [] if entry.chat_id is None else [entry.chat_id]
        return data, await memory.chat_keys([*owner, *counts, *(e.message.chat_id for e in found)])

    data, keys = _run(config_path, data_dir, action, create=False, writes=False)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    entry = data["entry"]
    click.echo(f"{entry['content']}  ×{entry['count']}  [{entry['status']}/{entry['provenance']}]")
    if entry["shared_id"] is not None:
        click.echo(
            f"own entry of {chat_label(entry['chat_id'], keys)}, beside global entry {entry['shared_id']}"
        )
    click.echo(f"meaning: {entry['meaning'] or '—'}  is_jargon: {entry['is_jargon']}")
    counts = ", ".join(f"{chat_label(int(c), keys)}: {n}" for c, n in data["chat_counts"].items())
    click.echo(f"counts per chat: {counts or 'none'}")
    for item in data["evidence"]:
        click.echo(f"-- message {item['message_id']} ({chat_label(item['chat_id'], keys)})")
        for m in item["context"]:
            mark = "»" if m["id"] == item["message_id"] else " "
            said = one_line(truncate(m["text"], 120))
            click.echo(f"{mark} {forward_marked(m['speaker'], m['forwarded'])}: {said}")
    for review in data["reviews"]:
        at = time.strftime("%Y-%m-%d %H:%M", time.localtime(review["time"]))
        click.echo(f"[{review['action']} by {review['actor']} at {at}]")


def _decide(action_name: Decision) -> click.Command:
    @click.command(action_name)
    @click.argument("ids", type=POSITIVE_INT, nargs=-1, required=True)
    @click.option("--meaning", default=None, help="Set the meaning at the same time.")
    @by_option
    @runtime_options
    def command(
        ids: tuple[int, ...],
        meaning: str | None,
        by: str | None,
        config_path: Path | None,
        data_dir: Path | None,
    ) -> None:
        async def action(memory: MemoryService) -> Listed:
            async with memory.db.write() as session:
                decided = await dictionary.decide(
                    session, list(ids), action_name, _actor(by), time.time(), meaning
                )
            return await _listed(memory, decided)

        entries, keys = _run(config_path, data_dir, action, create=False, writes=True)
        for entry in entries:
            click.echo(_line(entry, keys))

    command.help = f"{action_name.capitalize()} one or more entries (a batch: several ids)."
    return command


@jargon_group.command("edit")
@click.argument("jargon_id", type=POSITIVE_INT)
@click.option("--meaning", default=None, help="The meaning (becomes a manual decision).")
@click.option("--content", default=None, help="Correct the term's spelling.")
@click.option(
    "--jargon/--ordinary", "is_jargon", default=None, help="Mark as group jargon or an ordinary word."
)
@by_option
@runtime_options
def edit_command(
    jargon_id: int,
    meaning: str | None,
    content: str | None,
    is_jargon: bool | None,
    by: str | None,
    config_path: Path | None,
    data_dir: Path | None,
) -> None:
    """Edit an entry by hand (inference never overwrites it afterwards)."""
    if meaning is None and content is None and is_jargon is None:
        raise click.UsageError("give --meaning, --content or --jargon/--ordinary")

    async def action(memory: MemoryService) -> Listed:
        async with memory.db.write() as session:
            edited = await dictionary.edit(
                session, jargon_id, _actor(by), time.time(), meaning, content, is_jargon
            )
        return await _listed(memory, [edited])

    entries, keys = _run(config_path, data_dir, action, create=False, writes=True)
    click.echo(_line(entries[0], keys))


@jargon_group.command("delete")
@click.argument("ids", type=POSITIVE_INT, nargs=-1, required=True)
@by_option
@runtime_options
def delete_command(
    ids: tuple[int, ...], by: str | None, config_path: Path | None, data_dir: Path | None
) -> None:
    """Delete entries with their counts and evidence references (the review trail stays)."""

    async def action(memory: MemoryService) -> int:
        async with memory.db.write() as session:
            return await dictionary.remove(session, list(ids), _actor(by), time.time())

    click.echo(f"deleted {_run(config_path, data_dir, action, create=False, writes=True)}")


def _format(path: Path, fmt: str | None) -> transfer.Format:
    chosen = fmt or ("csv" if path.suffix.lower() == ".csv" else "json")
    return "csv" if chosen == "csv" else "json"


format_option = click.option(
    "--format", "fmt", type=click.Choice(["csv", "json"]), default=None, help="Default: from the file name."
)


@jargon_group.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--chat", default=GLOBAL, show_default=True, help="Scope: 'global' or a chat key platform:id.")
@format_option
@by_option
@runtime_options
def import_command(
    path: Path, chat: str, fmt: str | None, by: str | None, config_path: Path | None, data_dir: Path | None
) -> None:
    """Import a dictionary (CSV with a 'content' column, or JSON); rows become manual decisions.

    An exported row of one chat's own dictionary (its chat_id) loads only into that chat."""
    try:
        text = decode_saved(path.read_bytes())
    except OSError as exc:
        raise click.ClickException(f"cannot read {path}: {exc}") from None
    except UndecodableText as exc:
        raise click.ClickException(f"cannot read {path}: {exc}; save it as UTF-8") from None

    async def action(memory: MemoryService) -> transfer.ImportReport:
        rows, errors = transfer.parse(text, _format(path, fmt))
        chat_id = await _chat_id(memory, chat)
        async with memory.db.write() as session:
            report = await transfer.import_rows(session, rows, chat_id, _actor(by), time.time())
        report.errors = sorted(errors + report.errors)
        return report

    report = _run(config_path, data_dir, action, create=True, writes=True)
    click.echo(f"created {report.created}, updated {report.updated}, errors {len(report.errors)}")
    for number, message in report.errors:
        click.echo(f"row {number}: {message}", err=True)


@jargon_group.command("export")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@filter_options
@format_option
@runtime_options
def export_command(
    path: Path,
    chat: str | None,
    statuses: tuple[str, ...],
    min_count: int,
    fmt: str | None,
    config_path: Path | None,
    data_dir: Path | None,
) -> None:
    """Export entries to PATH ('-' for standard output)."""

    async def action(memory: MemoryService) -> list[EntryView]:
        chat_id = await _chat_id(memory, chat)
        async with memory.db.read() as session:
            return await dictionary.list_entries(session, chat_id, statuses, min_count, limit=None)

    entries = _run(config_path, data_dir, action, create=False, writes=False)
    text = transfer.render(entries, _format(path, fmt))
    if str(path) == "-":
        click.echo(text, nl=False)
    else:
        write_output(path, text)
        click.echo(f"exported {len(entries)} entries to {path}")


jargon_group.add_command(_decide("approve"))
jargon_group.add_command(_decide("reject"))

COMMANDS: list[click.Command] = [jargon_group]
