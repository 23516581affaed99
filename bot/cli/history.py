"""`qunyi topics --chat C [--json]` and `qunyi forget [--dry-run | --log] [--chat C]`: mid-term memory."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click

from bot.app import App
from bot.cli.options import async_command, find_chat, open_app, open_config, runtime_options
from bot.cli.printing import chat_label
from bot.history_setup import forget_policy
from memory.forgetting import ForgetReport, forget_log, forget_pass, forgotten_count
from memory.history.view import topic_views


async def _chat_id(app: App, chat_key: str | None) -> int | None:
    if chat_key is None:
        return None
    return (await find_chat(app.memory, chat_key, app.data_dir)).id


@click.command("topics")
@click.option("--chat", "chat_key", required=True, help="Chat as platform:id, or its id alone.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@runtime_options
@async_command
async def topics_command(
    chat_key: str, as_json: bool, config_path: Path | None, data_dir: Path | None
) -> None:
    """A chat's topics: packed ChatHistory rows and topics still collecting in the cache."""
    app = await open_app(open_config(config_path), data_dir, create=False, writes=False)
    try:
        chat_id = await _chat_id(app, chat_key)
        assert chat_id is not None
        async with app.db.read() as session:
            views = await topic_views(session, chat_id)
            forgotten = 0 if views else await forgotten_count(session, chat_id)
    finally:
        await app.close()
    if as_json:
        click.echo(json.dumps([v.to_json() for v in views], ensure_ascii=False, indent=2))
        return
    for view in views:
        click.echo(view.line())
    if forgotten:
        click.echo(f"no topics now: forgetting deleted {forgotten} (qunyi forget --log --chat {chat_key})")
    elif not views:
        click.echo("no topics yet")


def _print_report(report: ForgetReport, keys: dict[int, str]) -> None:
    verb = "would delete" if report.dry_run else "deleted"
    for plan in sorted(report.plans, key=lambda p: p.stage.number):
        if not plan.cohort:
            continue
        state = (
            "waits for a bigger cohort"
            if plan.waiting
            else f"{verb} {len(plan.deleted)}, moves {len(plan.promoted)}"
        )
        click.echo(f"stage {plan.stage.number}: cohort {plan.cohort}, {state}")
    for f in report.forgotten:
        click.echo(
            f"  {verb} #{f.id} ({chat_label(f.chat_id, keys)}) {f.theme} — stage {f.stage}, count {f.count}, "
            f"{f.end} end"
        )
    if not report.forgotten:
        click.echo(f"nothing {'would be ' if report.dry_run else ''}forgotten")


@click.command("forget")
@click.option("--chat", "chat_key", default=None, help="Only this chat's ChatHistory (platform:id or id).")
@click.option("--dry-run", is_flag=True, help="Print what the next pass would delete; change nothing.")
@click.option("--log", "show_log", is_flag=True, help="List what forgetting deleted, newest first.")
@runtime_options
@async_command
async def forget_command(
    chat_key: str | None, dry_run: bool, show_log: bool, config_path: Path | None, data_dir: Path | None
) -> None:
    """Run one forgetting pass over ChatHistory now (raw messages and jargon are never deleted)."""
    if show_log and dry_run:
        raise click.UsageError("--log lists past passes and --dry-run previews the next one: use one")
    writes = not (dry_run or show_log)
    app = await open_app(open_config(config_path), data_dir, create=False, writes=writes, upgrade=not dry_run)
    try:
        chat_id = await _chat_id(app, chat_key)
        if show_log:
            async with app.db.read() as session:
                entries = await forget_log(session, chat_id, limit=200)
            keys = await app.memory.chat_keys(e.chat_id for e in entries)
            for e in entries:
                when = datetime.fromtimestamp(e.time, UTC).isoformat(timespec="minutes")
                where = f"#{e.chat_history_id} ({chat_label(e.chat_id, keys)})"
                click.echo(f"{when} {where} {e.theme} — stage {e.stage}, count {e.count}")
            if not entries:
                click.echo("nothing forgotten yet")
            return
        policy, scope = forget_policy(app.settings)
        report = await forget_pass(app.db, app.clock.now(), policy, scope, chat_id, dry_run)
        keys = await app.memory.chat_keys(f.chat_id for f in report.forgotten)
    finally:
        await app.close()
    _print_report(report, keys)


COMMANDS = [topics_command, forget_command]
