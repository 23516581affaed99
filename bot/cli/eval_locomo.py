"""`qunyi eval locomo`: LoCoMo retrieval through the production recall (development split)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import click

from bot.app import embedder_config, recall_settings
from bot.cli.options import open_config
from bot.evals.locomo import DataError, evaluate, load_conversations
from memory.embeddings import make_embedder
from memory.embeddings.factory import EmbedderKind
from memory.embeddings.local import EmbedderUnavailable


@click.command("locomo")
@click.option(
    "--data",
    "data",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="LoCoMo JSON, e.g. ../shared/data/locomo/locomo_dev.json.",
)
@click.option(
    "--embedder",
    type=click.Choice(["none", "local", "openai"]),
    default=None,
    help="Dense similarity for this run (default: [recall] embedder of the config).",
)
@click.option(
    "--model", default=None, help="Embedding model (default: [recall] model, or the kind's default)."
)
@click.option("--base-url", default=None, help="For --embedder openai: the endpoint base URL including /v1.")
@click.option("--baseline", is_flag=True, help="Also score plain BM25 over single turns.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Config whose [recall] weights to use (default: ./config.toml if present, else defaults).",
)
def command(
    data: Path,
    embedder: EmbedderKind | None,
    model: str | None,
    base_url: str | None,
    baseline: bool,
    as_json: bool,
    config_path: Path | None,
) -> None:
    """Record each conversation into a fresh database and rank its turns for every question."""
    settings = open_config(config_path).current
    config = embedder_config(settings)
    kind = embedder or config.kind
    chosen_config = replace(
        config,
        kind=kind,
        model=model if model is not None else (config.model if kind == config.kind else ""),
        base_url=base_url if base_url is not None else config.base_url,
    )
    try:
        chosen = make_embedder(chosen_config)
        conversations = load_conversations(data)
    except (DataError, ValueError) as exc:
        raise click.UsageError(str(exc)) from None
    progress = None if as_json else (lambda line: click.echo(f"  {line}", err=True))
    try:
        report = asyncio.run(evaluate(conversations, recall_settings(settings), chosen, baseline, progress))
    except EmbedderUnavailable as exc:  # down, refusing, or a model that is not there
        raise click.ClickException(f"the embedder failed, nothing was scored: {exc}") from None
    if as_json:
        click.echo(json.dumps(report, indent=1))
        return
    click.echo(f"LoCoMo recall, embedder {report['embedder']}, {report['n_questions']} questions")
    for key in ("turn_recall_all@5", "turn_recall_all@10", "turn_recall_any@10", "session_frac@10"):
        click.echo(f"  {key:20} {report[key]:.4f}")
    for category, row in report["per_category"].items():
        turn = f"all@10 {row['turn_recall_all@10']:.3f}  " if "turn_recall_all@10" in row else ""
        click.echo(
            f"    category {category} (n={row['n_questions']}): {turn}session {row['session_frac@10']:.3f}"
        )
    click.echo(f"  {report['seconds']:.1f} s ({report['timings']})")


COMMANDS: list[click.Command] = [command]
