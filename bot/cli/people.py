"""`qunyi people list|show|edit|merge|forget --chat <chat>`: the people a chat knows, for admins.

A person is given as `#<id>` (the number `people list` prints), a platform user id, or a name,
which must resolve to one person of the chat (an ambiguous name is refused with the candidates).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from bot.app import App
from bot.cli.options import async_command, find_chat, open_app, open_config, runtime_options
from memory.models import PersonFact
from memory.persons import timeline_text
from memory.persons.admin import (
    PersonAdminError,
    check_addable,
    check_alias,
    check_fact,
    check_forgettable,
    check_removable,
)
from memory.persons.service import PersonMemory
from memory.persons.store import PersonRecord
from memory.storage.sql import stored_int

F = TypeVar("F", bound=Callable[..., Any])


@click.group("people")
def people() -> None:
    """The people of a chat: names, aliases, facts, timeline; edit, merge and forget."""


def chat_option(command: F) -> F:
    return click.option("--chat", "chat_key", required=True, help="Chat as platform:id, or its id alone.")(
        command
    )


@asynccontextmanager
async def _open(
    config_path: Path | None, data_dir: Path | None, chat_key: str, *, writes: bool
) -> AsyncIterator[tuple[App, int]]:
    """The app and the id of the chat `--chat` names. Every people command needs that chat, so a data
    directory without a database is an error, never a new empty one. Those that change people pass
    `writes` (options.open_app)."""
    app = await open_app(open_config(config_path), data_dir, create=False, writes=writes)
    try:
        yield app, (await find_chat(app.memory, chat_key, app.data_dir)).id
    finally:
        await app.close()


def _persons(app: App) -> PersonMemory:
    assert app.persons is not None
    return app.persons


async def _person(persons: PersonMemory, chat_id: int, key: str) -> PersonRecord:
    key = key.strip()
    if key.startswith("#") and key[1:].isascii() and key[1:].isdigit():
        number = stored_int(key[1:])
        record = await persons.record(chat_id, number) if number is not None else None
        if record is None:
            raise click.ClickException(f"person {key} is not a member of this chat")
        return record
    found = await persons.who(chat_id, key)
    if found.ambiguous:
        names = ", ".join(f"#{r.person_id} {r.name}" for r in found.records)
        raise click.ClickException(f"{key!r} is ambiguous: {names}; use #id")
    if not found.records:
        raise click.ClickException(f"no one called {key!r} in this chat")
    return found.records[0]


def _record_json(record: PersonRecord) -> dict[str, object]:
    def fact(f: PersonFact) -> dict[str, object]:
        return {
            "id": f.id,
            "key": f.key,
            "value": f.value,
            "source": f.source,
            "confidence": f.confidence,
            "message_id": f.message_id,
            "evidence": f.evidence,
            "time": f.time,
            "superseded_at": f.superseded_at,
            "seen_message_ids": f.seen_message_ids,
        }

    return {
        "person_id": record.person_id,
        "user_id": record.platform_user_id,
        "name": record.name,
        "nickname": record.nickname,
        "card": record.card,
        "aliases": [
            {"alias": a.alias, "source": a.source, "chat_id": a.chat_id, "weight": a.weight, "count": a.count}
            for a in record.aliases
        ],
        "attributes": dict(record.view.attributes),
        "facts": [fact(f) for f in record.facts],
        "superseded": [fact(f) for f in record.superseded],
        "timeline": [{"time": t.time, "text": t.text, "message_ids": t.message_ids} for t in record.timeline],
        "message_count": record.message_count,
        "left_at": None if record.left_at is None else record.left_at.isoformat(),
    }


@people.command("list")
@chat_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@runtime_options
@async_command
async def list_people(chat_key: str, as_json: bool, config_path: Path | None, data_dir: Path | None) -> None:
    """Every member with the name the bot uses and their other names; one who left the chat ends with
    `left` and the date."""
    async with _open(config_path, data_dir, chat_key, writes=False) as (app, chat_id):
        records = await _persons(app).records(chat_id)
    if as_json:
        click.echo(json.dumps([_record_json(r) for r in records], ensure_ascii=False, indent=2))
        return
    for r in records:
        aliases = ", ".join(list(r.view.aliases)[:6])
        left = "" if r.left_at is None else f"\tleft {r.left_at:%Y-%m-%d}"
        click.echo(f"#{r.person_id}\t{r.name}\t{r.message_count} msgs\t{aliases}{left}")


@people.command("show")
@click.argument("person")
@chat_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@runtime_options
@async_command
async def show(
    person: str, chat_key: str, as_json: bool, config_path: Path | None, data_dir: Path | None
) -> None:
    """A person's card, facts with their evidence, superseded facts and timeline."""
    async with _open(config_path, data_dir, chat_key, writes=False) as (app, chat_id):
        persons = _persons(app)
        record = await _person(persons, chat_id, person)
        card = await persons.card(chat_id, record.person_id)
        language = await app.memory.language(chat_id)
    if as_json:
        click.echo(json.dumps(_record_json(record), ensure_ascii=False, indent=2))
        return
    click.echo(card or "")
    for f in record.facts:
        click.echo(f"  fact {f.key} = {f.value} ({f.source}, message #{f.message_id}: {f.evidence})")
    for f in record.superseded:
        click.echo(f"  was  {f.key} = {f.value} (message #{f.message_id})")
    for t in record.timeline:
        cited = ", ".join(f"#{m}" for m in t.message_ids)
        click.echo(f"  {timeline_text.shown(t.text, language)} (messages {cited})")


@people.command("edit")
@click.argument("person")
@chat_option
@click.option("--name", "new_name", help="Set the name the bot uses for them in this chat.")
@click.option("--add-alias", multiple=True, help="Add an alias in this chat.")
@click.option("--remove-alias", multiple=True, help="Remove an alias (this chat's and the global one).")
@click.option(
    "--set-fact",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a fact in this chat, replacing every value of KEY.",
)
@click.option(
    "--add-fact",
    multiple=True,
    metavar="KEY=VALUE",
    help="Add a value of KEY in this chat, keeping the others.",
)
@click.option(
    "--remove-fact",
    multiple=True,
    metavar="KEY[=VALUE]",
    help="Delete every fact of a key, or with =VALUE that value only.",
)
@runtime_options
@async_command
async def edit(
    person: str,
    chat_key: str,
    new_name: str | None,
    add_alias: tuple[str, ...],
    remove_alias: tuple[str, ...],
    set_fact: tuple[str, ...],
    add_fact: tuple[str, ...],
    remove_fact: tuple[str, ...],
    config_path: Path | None,
    data_dir: Path | None,
) -> None:
    """Edit a person's name, aliases and facts in one chat."""
    if new_name is not None and not new_name.strip():
        raise click.UsageError("--name is empty")
    facts = [_key_value(item, "--set-fact") for item in set_fact]
    added = [_key_value(item, "--add-fact") for item in add_fact]
    removed = [_key_and_value(item) for item in remove_fact]
    try:  # every option is checked before anything changes
        for alias in add_alias:
            check_alias(alias)
        for key, value in facts:
            check_fact(key, value)
        for key, value in added:
            check_addable(key, value)
    except PersonAdminError as exc:
        raise click.ClickException(str(exc)) from None
    async with _open(config_path, data_dir, chat_key, writes=True) as (app, chat_id):
        persons = _persons(app)
        record = await _person(persons, chat_id, person)
        now = app.clock.now()
        try:
            for key, maybe_value in removed:  # checked before anything changes, as the options above
                check_removable(
                    key, maybe_value, (f.value for f in (*record.facts, *record.superseded) if f.key == key)
                )
            if new_name:
                await persons.admin.rename(chat_id, record.person_id, new_name, now=now, reason="admin")
            for alias in add_alias:
                await persons.admin.add_alias(chat_id, record.person_id, alias, now=now)
            for alias in remove_alias:
                await persons.admin.remove_alias(chat_id, record.person_id, alias)
            for key, value in facts:
                await persons.admin.set_fact(chat_id, record.person_id, key, value, now=now)
            for key, value in added:
                await persons.admin.add_fact(chat_id, record.person_id, key, value, now=now)
            for key, maybe_value in removed:
                await persons.admin.remove_fact(chat_id, record.person_id, key, maybe_value, now=now)
        except PersonAdminError as exc:
            raise click.ClickException(str(exc)) from None
        card = await persons.card(chat_id, record.person_id)
    click.echo(card or "")


def _key_value(item: str, option: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep:
        raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=option)
    return key.strip(), value.strip()


def _key_and_value(item: str) -> tuple[str, str | None]:
    """`--remove-fact KEY` (every value) or `KEY=VALUE` (that value only)."""
    key, sep, value = item.partition("=")
    if sep and not value.strip():
        raise click.BadParameter(
            f"{item!r} names no value: give KEY or KEY=VALUE", param_hint="--remove-fact"
        )
    return key.strip(), (value.strip() if sep else None)


@people.command("merge")
@click.argument("survivor")
@click.argument("merged")
@chat_option
@runtime_options
@async_command
async def merge(
    survivor: str, merged: str, chat_key: str, config_path: Path | None, data_dir: Path | None
) -> None:
    """Merge MERGED into SURVIVOR (aliases, facts, timeline, memberships and messages move)."""
    async with _open(config_path, data_dir, chat_key, writes=True) as (app, chat_id):
        persons = _persons(app)
        keep = await _person(persons, chat_id, survivor)
        gone = await _person(persons, chat_id, merged)
        try:
            await persons.admin.merge(keep.person_id, gone.person_id)
        except PersonAdminError as exc:
            raise click.ClickException(str(exc)) from None
        card = await persons.card(chat_id, keep.person_id)
    click.echo(f"merged #{gone.person_id} into #{keep.person_id}\n{card}")


@people.command("forget")
@click.argument("person")
@chat_option
@click.option(
    "--remove-messages/--keep-messages",
    default=None,
    help="Also delete their raw messages (default: [persons] forget_removes_messages).",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@runtime_options
@async_command
async def forget(
    person: str,
    chat_key: str,
    remove_messages: bool | None,
    yes: bool,
    config_path: Path | None,
    data_dir: Path | None,
) -> None:
    """Delete everything learnt about a person (a request to be forgotten), in every chat."""
    async with _open(config_path, data_dir, chat_key, writes=True) as (app, chat_id):
        persons = _persons(app)
        record = await _person(persons, chat_id, person)
        try:
            check_forgettable(record.person_id, record.platform_user_id, record.is_bot)
        except PersonAdminError as exc:
            raise click.ClickException(str(exc)) from None
        remove = app.settings.persons.forget_removes_messages if remove_messages is None else remove_messages
        what = "facts, timeline, aliases, names" + (" and raw messages" if remove else "")
        if not yes:
            click.confirm(f"Forget #{record.person_id} {record.name} ({what})?", abort=True)
        report = await persons.admin.forget(record.person_id, remove_messages=remove, now=app.clock.now())
    click.echo(
        f"forgot #{report.person_id}: {report.facts} facts, {report.timeline} timeline entries, "
        f"{report.aliases} aliases, {report.names} names, {report.messages_removed} messages removed"
    )


COMMANDS = [people]
