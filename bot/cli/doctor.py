"""`qunyi doctor`: checks config, database, model endpoint and budgets, and says what is missing."""

from __future__ import annotations

import stat
from dataclasses import dataclass, replace
from pathlib import Path

import aiohttp
import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy import text

from bot import unrecorded
from bot.app import App, build_app, embedder_config, embedding_model
from bot.cli.embeddings import prune_hint
from bot.cli.options import async_command, missing_database, open_config, runtime_options
from bot.cli.printing import command_hint, size_text
from bot.config import ConfigStore, Settings
from bot.llm import usage_spill
from bot.offline_work import WaitingWork, waiting_work
from bot.tools import build_registry, tool_definition_tokens
from memory.embeddings import make_embedder
from memory.embeddings.backfill import SIZE_PROBE
from memory.embeddings.local import DEFAULT_MODEL, EmbedderUnavailable, LocalEmbedder
from memory.embeddings.stored_models import StoredModel, stored_models
from memory.storage import DatabaseBehind, DatabaseMissing, DatabaseUnavailable
from memory.storage.compact import Space, space_of
from memory.storage.database import PRIVATE_FOLDER_MODE
from memory.storage.migrate import newest, schema_state
from memory.storage.tables import missing_tables

# Free pages in the database file worth a `qunyi compact`: over both (decimal megabytes, as sizes print).
COMPACT_WARN_BYTES = 64_000_000
COMPACT_WARN_SHARE = 0.25  # of the file and its -wal file on disk


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: str  # ok | warn | fail | info
    detail: str


def _config_check(config: ConfigStore) -> Check:
    return Check("config", "ok", str(config.path or "built-in defaults"))


def _tools_check() -> Check:
    tokens = tool_definition_tokens(build_registry())
    status = "ok" if tokens.tokens < 500 else "warn"
    return Check("tool definitions", status, f"{tokens.tokens} tokens ({tokens.method}), limit 500")


def _llm_off() -> Check:
    return Check("llm", "info", "off ([llm] enabled = false): every job uses its offline path")


class MissingTables(Exception):
    """The database lacks tables of its schema (dropped by hand, or by a tool that edited the file)."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(
            f"tables missing: {', '.join(names)}; the commands reading them fail: restore a backup of "
            "the data directory (qunyi backup makes one)"
        )


async def run_checks(app: App) -> list[Check]:
    """Every check doctor prints, in order."""
    checks = [_config_check(app.config)]
    try:
        async with app.db.read() as session:
            revisions = (await session.execute(text("SELECT version_num FROM alembic_version"))).scalars()
            schema = schema_state(revisions)
            missing = await missing_tables(session)
            if missing:
                raise MissingTables(missing)
            await session.execute(text("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH '\"x\"'"))
            stored = await stored_models(session)
            pages = [
                int((await session.execute(text(f"PRAGMA {name}"))).scalar_one())
                for name in ("page_size", "page_count", "freelist_count")
            ]
        checks.append(Check("database", "ok", f"{app.db.path} (schema {schema})"))
        stats = await app.memory.stats()
        checks.append(Check("memory", "info", ", ".join(f"{k} {v}" for k, v in stats.items())))
        checks.append(offline_work_check(await waiting_work(app)))
        checks.extend(waiting_checks(app.data_dir))
        checks.extend(open_folder_checks(app.data_dir))
        space: Space | None = space_of(app.db.path, *pages)
    except Exception as exc:
        checks.append(Check("database", "fail", f"{app.db.path}: {exc}"))
        stored = []
        space = None
    checks.extend(await llm_checks(app))
    checks.append(await embedder_check(app.settings))
    checks.extend(unused_vector_checks(app, stored))
    if space is not None and worth_compacting(space):
        checks.append(compact_check(app, space))
    checks.append(_tools_check())
    return checks


def offline_work_check(work: list[WaitingWork]) -> Check:
    """The work left for a model, as one check: ok when none waits, a warning when some waits on a job
    a setting stops while the model is meant to be used."""
    if not any(w.waiting for w in work):
        return Check("offline work", "ok", "nothing waits for a model")
    status = "warn" if any(w.waiting and w.misconfigured for w in work) else "info"
    return Check("offline work", status, "; ".join(w.text() for w in work))


def waiting_checks(data_dir: Path) -> list[Check]:
    """A warning when messages or LLM usage rows the bot could not store before it stopped still wait
    for `qunyi run`."""
    checks: list[Check] = []
    for name, count, files in (
        ("unrecorded messages", unrecorded.waiting(data_dir), [data_dir / unrecorded.FILE_NAME]),
        ("held LLM usage", len(usage_spill.held_rows(data_dir)), usage_spill.held_files(data_dir)),
    ):
        if count:
            where = ", ".join(str(path) for path in files)
            checks.append(Check(name, "warn", f"{count} in {where}: the next `qunyi run` stores them"))
    return checks


def open_folder_checks(data_dir: Path) -> list[Check]:
    """A warning when others than its owner may read the data directory: one made by a Qunyi from
    before folders were made private (or by hand) keeps its 0755, and it holds every chat's messages."""
    mode = stat.S_IMODE(data_dir.stat().st_mode)
    if not mode & 0o077:
        return []
    return [
        Check(
            "data directory",
            "warn",
            f"{data_dir} is mode {mode:04o}: other local users may read every chat's messages; "
            f"`chmod {PRIVATE_FOLDER_MODE:o} {data_dir}` keeps it to its owner",
        )
    ]


def _database_check(error: DatabaseUnavailable) -> Check:
    if isinstance(error, DatabaseMissing):
        return Check("database", "fail", missing_database(error.path.parent))
    if isinstance(error, DatabaseBehind):
        return Check(
            "database",
            "warn",
            f"{error.path} (schema {schema_state(error.current)}; this version's newest is "
            f"{newest(error.heads)}): its contents are checked after the upgrade",
        )
    return Check("database", "fail", f"cannot open {error.path}: {error.reason}")


def checks_without_database(config: ConfigStore, error: DatabaseUnavailable) -> list[Check]:
    """The checks when the database is missing (doctor never creates it: a mistyped --data-dir must not
    look like an empty memory), cannot be opened, or is behind this version's schema (doctor never
    upgrades it either: a bot of the version before may still be running on it). The model endpoint's
    usage and budgets live in the database, so the endpoint is not checked."""
    llm = (
        Check("llm", "warn", "not checked: its usage and budgets are kept in the database")
        if config.current.llm.enabled
        else _llm_off()
    )
    return [_config_check(config), _database_check(error), llm, _tools_check()]


async def endpoint_reachable(base_url: str, limit_seconds: float = 5.0) -> str | None:
    """None when `GET {base_url}/models` answers at all (any HTTP status), else why not."""
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=limit_seconds)) as session,
            session.get(base_url.rstrip("/") + "/models") as response,
        ):
            return None if response.status < 500 else f"HTTP {response.status}"
    except (aiohttp.ClientError, TimeoutError) as exc:
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _embeds(settings: Settings, limit_seconds: float = 10.0) -> str | None:
    """None when the `openai` embedder embeds a two-character text, else why not: an endpoint that
    answers GET /models can still refuse every embedding (a wrong key, a base_url without /v1, a model
    name it does not know), which the backfill then fails at every turn."""
    config = embedder_config(settings)
    embedder = make_embedder(replace(config, timeout_seconds=min(config.timeout_seconds, limit_seconds)))
    assert embedder is not None  # an "openai" embedder
    try:
        await embedder.embed([SIZE_PROBE])
    except EmbedderUnavailable as exc:
        return str(exc)
    return None


async def embedder_check(settings: Settings) -> Check:
    """The `[recall]` embedder: its package and model on this machine, or its endpoint reachable."""
    recall = settings.recall
    if recall.embedder == "none":
        return Check("embedder", "info", "none: recall is lexical only")
    if recall.embedder == "local":
        model = recall.model or DEFAULT_MODEL
        problem = LocalEmbedder(model).unavailable_reason()
    else:
        model = f"{recall.model} @ {recall.base_url}"
        problem = await _embeds(settings)
    detail = f"{recall.embedder} {model}"
    if problem:
        return Check("embedder", "fail", f"{detail} — {problem}; recall falls back to lexical only")
    return Check("embedder", "ok", detail)


def unused_vector_checks(app: App, stored: list[StoredModel]) -> list[Check]:
    """A warning for each model not in force whose vectors are still stored: their size, and the
    command that deletes them (nothing deletes them by itself)."""
    in_force = embedding_model(app.settings)
    return [
        Check(
            "unused vectors",
            "warn",
            f"{found.vectors:,} vectors ({size_text(found.bytes)}) of {found.model!r}, not the model in "
            f"force; `{prune_hint(found.model, app.config.path, app.data_dir)}` deletes them",
        )
        for found in stored
        if found.model != in_force
    ]


def worth_compacting(space: Space) -> bool:
    """Whether the database file's free pages are many: over COMPACT_WARN_BYTES, and over
    COMPACT_WARN_SHARE of what the database takes on disk."""
    return (
        space.reclaimable > COMPACT_WARN_BYTES and space.reclaimable > COMPACT_WARN_SHARE * space.file_bytes
    )


def compact_check(app: App, space: Space) -> Check:
    """A warning with the size of the free pages in the database file, and the command that gives them
    back to the disk (SQLite keeps them: nothing shrinks the file by itself)."""
    hint = command_hint(["compact"], app.config.path, app.data_dir)
    return Check(
        "reclaimable space",
        "warn",
        f"{size_text(space.reclaimable)} of the database's {size_text(space.file_bytes)} on disk are free "
        f"pages left by deleted memory; with the bot stopped, `{hint}` gives them back to the disk",
    )


def _cap(tokens: int | None) -> str:
    """A token cap as shown: ∞ when there is none (0 is a cap: the task may spend nothing)."""
    return "∞" if tokens is None else str(tokens)


async def llm_checks(app: App) -> list[Check]:
    """The model endpoint per task: configured, reachable, within budget."""
    llm = app.settings.llm
    if not llm.enabled:
        return [_llm_off()]
    checks = []
    reachable: dict[str, str | None] = {}
    for task, report in (await app.llm.report()).items():
        usage = report["usage"]
        spent = ""
        if usage is not None:
            spent = (
                f"; {usage['hour']:,} tokens/h (cap {_cap(usage['cap_hour'])}), "
                f"{usage['day']:,}/day (cap {_cap(usage['cap_day'])}), {usage['failures']} failures"
                + (f" ({usage['cancelled']} cancelled)" if usage["cancelled"] else "")
            )
        reason = report["unavailable_reason"]
        if reason is None and report["base_url"]:
            if report["base_url"] not in reachable:
                reachable[report["base_url"]] = await endpoint_reachable(report["base_url"])
            unreachable = reachable[report["base_url"]]
            if unreachable:
                reason = f"endpoint {report['base_url']} unreachable: {unreachable}"
        status = "ok" if reason is None else ("warn" if "budget" in reason else "fail")
        if usage is not None and usage["last_error"]:
            # A task failing at every call (a spent quota, a wrong key or base_url) looked usable.
            spent += f"; its last request failed: {usage['last_error']}"
            status = "warn" if status == "ok" else status
        checks.append(
            Check(
                f"llm:{task}",
                status,
                f"{report['model'] or '-'} @ {report['base_url'] or '-'}"
                + (f" — {reason}" if reason else "")
                + spent,
            )
        )
    return checks


@click.command("doctor")
@runtime_options
@async_command
async def doctor_command(config_path: Path | None, data_dir: Path | None) -> None:
    """Check the set-up and say what is missing (never creates the database, nor upgrades it)."""
    config = open_config(config_path)
    try:
        app = await build_app(config, data_dir, watch_config=False, create=False, upgrade=False)
    except DatabaseUnavailable as exc:
        checks = checks_without_database(config, exc)
        checks.insert(-1, await embedder_check(config.current))
    else:
        try:
            checks = await run_checks(app)
        finally:
            await app.close()
    table = Table("check", "status", "detail")
    colors = {"ok": "green", "warn": "yellow", "fail": "red", "info": "cyan"}
    for check in checks:
        table.add_row(escape(check.name), f"[{colors[check.status]}]{check.status}[/]", escape(check.detail))
    Console().print(table)
    if any(check.status == "fail" for check in checks):
        raise SystemExit(1)


COMMANDS = [doctor_command]
