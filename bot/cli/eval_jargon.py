"""`qunyi eval jargon`: the production jargon job (offline path) on slang examples mixed into ordinary
chat, on a fresh temporary database."""

from __future__ import annotations

import json
from pathlib import Path

import click

from bot.app import mining_settings
from bot.cli.options import open_config, runtime_options_with
from bot.evals.jargon import Cadence, evaluate, evaluate_job, load_filler, load_terms, split_terms
from memory.jargon.discovery import Discoverer

DATA = Path("..") / "shared" / "data"


@click.command("jargon")
@click.option(
    "--terms",
    "terms_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=DATA / "slang_zh" / "buzzwords_dev.json",
    show_default=True,
    help='Gold terms: {term: {"example": [sentences]}}.',
)
@click.option(
    "--filler",
    "filler_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=DATA / "lccc" / "toy_data.json",
    show_default=True,
    help="Ordinary chat: LCCC-style {split: [[utterance, ...], ...]}.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the interleaving.")
@click.option(
    "--history",
    "history_size",
    type=click.IntRange(min=10),
    default=3000,
    show_default=True,
    help="Messages of history the job loads for statistics.",
)
@click.option("--cooldown", type=float, default=20.0, show_default=True, help="Seconds between runs.")
@click.option(
    "--min-new",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="New messages needed for a run.",
)
@click.option(
    "--min-count",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Dictionary count at which a term counts as mined (first inference threshold).",
)
@click.option(
    "--half",
    type=click.IntRange(0, 1),
    default=None,
    help="Use only one fixed half of the terms (0 = tuning half, 1 = held-out half).",
)
@click.option(
    "--max-terms",
    type=click.IntRange(min=1),
    default=None,
    help="Use only this many terms (a fixed random sample): a quick smoke run.",
)
@click.option(
    "--max-filler",
    type=click.IntRange(min=0),
    default=None,
    help="Use only the first this many filler dialogues.",
)
@click.option(
    "--miner-only",
    is_flag=True,
    help="Drive the in-memory discoverer alone instead of the production DB-backed job.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@runtime_options_with("Keep the evaluation database here (default: a temporary folder, removed afterwards).")
def jargon(
    terms_path: Path,
    filler_path: Path,
    seed: int,
    history_size: int,
    cooldown: float,
    min_new: int,
    min_count: int,
    half: int | None,
    max_terms: int | None,
    max_filler: int | None,
    miner_only: bool,
    as_json: bool,
    config_path: Path | None,
    data_dir: Path | None,
) -> None:
    """Mine jargon from a simulated group chat and score it against the gold terms.

    Job settings come from `[jargon]` of the config (`--history`, `--cooldown` and
    `--min-new` override its history and cadence);
    `--data-dir` keeps the evaluation database there instead of a temporary folder."""
    base = mining_settings(open_config(config_path).current)
    try:
        terms = split_terms(load_terms(terms_path), half, seed, max_terms)
        filler = load_filler(filler_path)[:max_filler]
    except (ValueError, TypeError, AttributeError) as exc:
        raise click.ClickException(f"cannot read the evaluation data: {exc}") from exc
    cadence = Cadence(cooldown, min_new)
    if miner_only:
        miner = Discoverer(history_size=history_size)
        result = evaluate(terms, filler, miner, seed=seed, cadence=cadence, min_count=min_count)
    else:
        result = evaluate_job(terms, filler, seed, cadence, min_count, history_size, base, data_dir)
    result.update(
        half=half,
        seed=seed,
        history=history_size,
        terms_file=str(terms_path),
        miner="discoverer" if miner_only else "job",
    )
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False, indent=2))
        return
    click.echo(
        f"precision {result['precision']:.3f}  recall {result['recall']:.3f}  f1 {result['f1']:.3f}  "
        f"({result['n_mined']} mined of {result['n_terms']} terms, {result['seconds']} s)"
    )


COMMANDS: list[click.Command] = [jargon]
