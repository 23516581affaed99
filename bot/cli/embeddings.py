"""`qunyi embeddings status [--json]` and `qunyi embeddings prune --model NAME [--dry-run] [--force]
[--json]`: the dense vectors stored per model, how far the backfill of the model in force has got, and
deleting the vectors of a model no longer used (memory.embeddings.prune)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click

from bot.app import embedding_model
from bot.cli.options import async_command, open_config, open_database, runtime_options
from bot.cli.printing import command_hint, size_text
from bot.config import Settings
from memory.embeddings.backfill import BackfillProgress, Progress, backfill_progress
from memory.embeddings.prune import Pruned, left_of, prune_batches
from memory.embeddings.stored_models import StoredModel, stored_models
from memory.storage import Database, DatabaseLocked
from memory.storage.compact import measure


def prune_hint(model: str, config_path: Path | None = None, data_dir: Path | None = None) -> str:
    """The command that deletes `model`'s vectors, quoted for a shell (with the options given here)."""
    return command_hint(["embeddings", "prune", "--model", model], config_path, data_dir)


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def _model_line(found: StoredModel, in_force: str | None) -> str:
    state = "in force" if found.model == in_force else "not in use"
    sizes = ", ".join(str(d) for d in found.dimensions)
    return (
        f"{found.model!r}\t{state}\t{_plural(found.vectors, 'vector')}\t{sizes} values\t"
        f"{size_text(found.bytes)}\t{_plural(found.chats, 'chat')}"
    )


def _model_json(found: StoredModel, in_force: str | None) -> dict[str, Any]:
    return {
        "model": found.model,
        "in_force": found.model == in_force,
        "vectors": found.vectors,
        "dimensions": list(found.dimensions),
        "bytes": found.bytes,
        "chats": found.chats,
    }


def _progress_json(progress: Progress) -> dict[str, int]:
    return {"embedded": progress.embedded, "total": progress.total, "waiting": progress.waiting}


def _backfill_line(model: str, progress: BackfillProgress) -> str:
    return (
        f"backfill of {model!r}: {progress.rows.embedded:,} of {progress.rows.total:,} rows embedded "
        f"(messages {progress.messages.embedded:,}/{progress.messages.total:,}, "
        f"topics {progress.topics.embedded:,}/{progress.topics.total:,}), {progress.rows.waiting:,} waiting"
    )


def _wrong_size_line(model: str, dimension: int, wrong_size: int) -> str:
    return (
        f"{_plural(wrong_size, 'vector')} of {model!r} not of {dimension} values, the size taken as its "
        "own (the most common among its stored vectors; the model is not loaded to ask it): recall "
        "ignores them, and the backfill embeds their rows again (counted as waiting)"
    )


def _in_force_size(models: list[StoredModel], in_force: str) -> tuple[int, int]:
    """The size taken as the model in force's (the most common of its stored vectors; 0 when none is
    stored) and how many of its vectors are of another size."""
    for found in models:
        if found.model == in_force:
            dimension = found.usual_dimension
            return dimension, found.vectors_not_of(dimension)
    return 0, 0


@click.group("embeddings")
def embeddings_group() -> None:
    """The dense vectors stored per model: what each holds, and deleting a model's."""


@embeddings_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@runtime_options
@async_command
async def status_command(as_json: bool, config_path: Path | None, data_dir: Path | None) -> None:
    """The embedder and model in force, the vectors stored per model name, and how many rows still wait
    for a vector of the model in force."""
    settings = open_config(config_path).current
    in_force = embedding_model(settings)
    db = await open_database(settings, data_dir, create=False, writes=False)
    dimension = wrong_size = 0
    try:
        async with db.read() as session:
            models = await stored_models(session)
            progress = None
            if in_force is not None:
                dimension, wrong_size = _in_force_size(models, in_force)
                progress = await backfill_progress(session, in_force, dimension)
    finally:
        await db.close()
    if as_json:
        fields = {
            "embedder": settings.recall.embedder,
            "model_in_force": in_force,
            "models": [_model_json(found, in_force) for found in models],
            "backfill": None
            if progress is None
            else {
                "model": in_force,
                **_progress_json(progress.rows),
                "messages": _progress_json(progress.messages),
                "topics": _progress_json(progress.topics),
                "dimension": dimension or None,
                "wrong_size": wrong_size,
            },
        }
        click.echo(json.dumps(fields, ensure_ascii=False, indent=2))
        return
    if in_force is None or progress is None:
        click.echo("embedder: none (no model in force: recall is lexical only)")
    else:
        click.echo(f"embedder: {settings.recall.embedder}, model in force: {in_force!r}")
        click.echo(_backfill_line(in_force, progress))
        if wrong_size:
            click.echo(_wrong_size_line(in_force, dimension, wrong_size))
    for found in models:
        click.echo(_model_line(found, in_force))
    if not models:
        click.echo("no vectors stored")
    unused = [found.model for found in models if found.model != in_force]
    for model in unused:
        click.echo(f"delete the vectors of {model!r} with: {prune_hint(model, config_path, data_dir)}")


def _unknown_model(model: str, models: list[StoredModel]) -> str:
    if not models:
        return f"no vectors of model {model!r} are stored: no vectors are stored at all"
    names = ", ".join(repr(found.model) for found in models)
    return f"no vectors of model {model!r} are stored; the stored models are {names}"


def _refuse_in_force(model: str, settings: Settings) -> str:
    return (
        f"{model!r} is the model in force ([recall] embedder = {settings.recall.embedder!r}): dense recall "
        "uses its vectors. Pass --force to delete them anyway (the backfill then embeds every message and "
        "topic again)"
    )


async def _pruned(db: Database, planned: StoredModel) -> Pruned:
    """Run the prune; a database another process holds past the busy timeout stops it with a one-line
    error saying how much went before."""
    total = Pruned()
    try:
        async for step in prune_batches(db, planned):
            total.vectors += step.vectors
            total.bytes += step.bytes
    except DatabaseLocked as exc:
        raise click.ClickException(
            f"{exc}: another process (a running bot?) is writing to it; {total.vectors:,} of "
            f"{planned.vectors:,} vectors of {planned.model!r} were deleted before it; run the command "
            "again to delete the rest"
        ) from None
    return total


@embeddings_group.command("prune")
@click.option(
    "--model", "model", required=True, help="The model name whose vectors go (as `status` lists it)."
)
@click.option("--dry-run", is_flag=True, help="Print what would be deleted; delete nothing.")
@click.option("--force", is_flag=True, help="Allow deleting the vectors of the model in force.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@runtime_options
@async_command
async def prune_command(
    model: str, dry_run: bool, force: bool, as_json: bool, config_path: Path | None, data_dir: Path | None
) -> None:
    """Delete every stored vector of model NAME, a model no longer in force, in short batches (safe while
    the bot runs). The database file keeps its size (SQLite reuses the freed space for new rows) until
    `qunyi compact`."""
    settings = open_config(config_path).current
    in_force = model == embedding_model(settings)
    db = await open_database(settings, data_dir, create=False, writes=not dry_run, upgrade=not dry_run)
    try:
        async with db.read() as session:
            found = await stored_models(session, model)
            if not found:
                raise click.UsageError(_unknown_model(model, await stored_models(session)))
        if in_force and not force:
            raise click.UsageError(_refuse_in_force(model, settings))
        planned = found[0]
        space_before = None if dry_run else await asyncio.to_thread(measure, db.path, db.busy_timeout_ms)
        deleted = Pruned(planned.vectors, planned.bytes) if dry_run else await _pruned(db, planned)
        kept = 0 if dry_run else await left_of(db, model)
        space = None if dry_run else await asyncio.to_thread(measure, db.path, db.busy_timeout_ms)
    finally:
        await db.close()
    if as_json:
        fields = {
            "model": model,
            "in_force": in_force,
            "dry_run": dry_run,
            "vectors": deleted.vectors,
            "bytes": deleted.bytes,
            "chats": planned.chats,
            "kept": kept,
        }
        click.echo(json.dumps(fields, ensure_ascii=False, indent=2))
        return
    verb = "would delete" if dry_run else "deleted"
    click.echo(
        f"{verb} {_plural(deleted.vectors, 'vector')} of {model!r} ({size_text(deleted.bytes)}) in "
        f"{_plural(planned.chats, 'chat')}" + ("; nothing deleted (--dry-run)" if dry_run else "")
    )
    if in_force:
        click.echo(
            f"{model!r} is the model in force: the backfill embeds every message and topic again "
            f"(up to [recall] backfill_batch = {settings.recall.backfill_batch} of each a run)"
        )
    elif kept:
        click.echo(
            f"{_plural(kept, 'vector')} of {model!r} written while the prune ran were kept: a bot still "
            "running with that model writes them (restart it with the new config, then prune again)"
        )
    # Only what this prune freed is worth a hint: a new database already holds a few free pages (its
    # schema upgrades rebuild tables).
    if space is not None and space_before is not None and space.reclaimable > space_before.reclaimable:
        click.echo(
            f"the database file ({size_text(space.file_bytes)}) keeps the space: it could now shrink by "
            f"{size_text(space.reclaimable)}; with the bot stopped, "
            f"`{command_hint(['compact'], config_path, data_dir)}` gives that back to the disk"
        )


COMMANDS = [embeddings_group]
