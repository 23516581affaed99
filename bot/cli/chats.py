"""`qunyi chats list` and `qunyi chats merge FROM INTO [--dry-run] [--any-platform]`: the chats Qunyi
remembers, and moving one chat's memory into another's (memory.chat_merge)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bot.chat_moves import chat_setting_hints
from bot.cli.options import async_command, chat_not_found, open_app, open_config, runtime_options
from memory.chat_merge import ChatMergeError, describe, merge_chats
from memory.overview import chat_overviews
from memory.service import ChatRef, MemoryService


def _only_marks(n: int) -> str:
    """The note on a chat holding only deletion marks, which `list` shows among the others."""
    marks = "1 deletion mark" if n == 1 else f"{n} deletion marks"
    return (
        f"no messages, only {marks} (deletions seen before anything of the chat was recorded, kept so "
        "that a later import leaves those messages out)"
    )


@click.group("chats")
def chats_group() -> None:
    """The chats Qunyi remembers: list them, merge one into another."""


@chats_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@runtime_options
@async_command
async def list_chats(as_json: bool, config_path: Path | None, data_dir: Path | None) -> None:
    """Every chat with its key (platform:id) and how much memory it holds, and the keys of the chats
    merged into it (what arrives under them goes there); a chat holding only deletion marks says so."""
    app = await open_app(open_config(config_path), data_dir, create=False, writes=False)
    try:
        async with app.db.read() as session:
            chats = await chat_overviews(session)
    finally:
        await app.close()
    if as_json:
        rows = [
            {
                "id": c.id,
                "key": c.key,
                "name": c.name,
                "messages": c.messages,
                "members": c.members,
                "topics": c.topics,
                "cached_topics": c.cached_topics,
                "jargon": c.jargon,
                "merged_from": list(c.merged_from),
                "deletion_marks": c.deletion_marks,
            }
            for c in chats
        ]
        click.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    for c in chats:
        name = " ".join(c.name.split()) or "-"  # a name's line breaks and tabs would break the listing
        click.echo(
            f"{c.key}\t#{c.id}\t{name}\t{c.messages} messages\t{c.members} members\t"
            f"{c.topics} topics\t{c.jargon} jargon terms"
            + (f"\tmerged from {', '.join(c.merged_from)}" if c.merged_from else "")
            + (f"\t{_only_marks(c.deletion_marks)}" if c.only_deletion_marks else "")
        )
    if not chats:
        click.echo("no chats yet")


async def _one_chat(memory: MemoryService, key: str, which: str, data_dir: Path) -> ChatRef:
    found = await memory.chats_matching(key)
    if len(found) != 1:
        raise click.UsageError(f"{which}: {chat_not_found(key, found, f' in {data_dir}')}")
    return found[0]


@chats_group.command("merge")
@click.argument("source_key", metavar="FROM")
@click.argument("target_key", metavar="INTO")
@click.option("--dry-run", is_flag=True, help="Print what would move; change nothing.")
@click.option("--any-platform", is_flag=True, help="Allow chats of two different platforms.")
@runtime_options
@async_command
async def merge_command(
    source_key: str,
    target_key: str,
    dry_run: bool,
    any_platform: bool,
    config_path: Path | None,
    data_dir: Path | None,
) -> None:
    """Move everything remembered of chat FROM into chat INTO (platform:id each) and delete FROM:
    messages, topics, jargon, people's names, aliases and facts there, job cursors and notes. For a
    group that got a new id, e.g. a Telegram group upgraded to a supergroup. A key starting with `-`
    (a bare Telegram id) goes after `--`: `qunyi chats merge -- -4455 -1004455`."""
    config = open_config(config_path)
    # A dry run too takes the database's write lock (and rolls back), so it holds the data directory
    # for writing as well: refused at once while `qunyi compact` runs, rather than after the busy timeout.
    app = await open_app(config, data_dir, create=False, writes=True, upgrade=not dry_run)
    try:
        source = await _one_chat(app.memory, source_key, "FROM", app.data_dir)
        target = await _one_chat(app.memory, target_key, "INTO", app.data_dir)
        if source.merged_from is not None:
            raise click.UsageError(f"FROM: {source.merged_from} was already merged into {source.key}")
        if source.id == target.id:
            raise click.UsageError(f"FROM and INTO are the same chat ({source.key})")
        if source.platform != target.platform and not any_platform:
            raise click.UsageError(
                f"{source.key} and {target.key} are chats of different platforms; "
                "pass --any-platform to merge them anyway"
            )
        try:
            report = await merge_chats(
                app.db,
                source.id,
                target.id,
                now=app.clock.now().timestamp(),
                notes=app.memory.notes,
                dry_run=dry_run,
            )
        except ChatMergeError as exc:
            raise click.ClickException(str(exc)) from None
    finally:
        await app.close()
    for line in describe(report) if dry_run else [report.summary()]:
        click.echo(line)
    for hint in chat_setting_hints(config.current, report):
        click.echo(f"note: {hint}", err=True)


COMMANDS = [chats_group]
