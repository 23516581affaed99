"""`qunyi eval disentangle`: thread disentanglement on the Ubuntu IRC development files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from bot.cli.options import open_config, runtime_options_with
from bot.cli.printing import write_output
from bot.evals.data_files import DataError
from bot.evals.disentangle import evaluate, format_clusters, load_chats
from memory.topics import Disentangler


@click.command("disentangle")
@click.option(
    "--data",
    "data",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="Folder of *.raw.txt / *.annotation.txt files, e.g. ../shared/data/irc_disentanglement/dev.",
)
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write predicted conversations here (gold.dev.clusters.txt format).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@runtime_options_with("Not used: this evaluation needs no database.")
def command(
    data: Path, out: Path | None, as_json: bool, config_path: Path | None, data_dir: Path | None
) -> None:
    """Run the production Disentangler over every file, online, and score it against gold.

    Uses `[topics.disentangle]` of the config; `--data-dir` is not used (this eval needs no database)."""
    params = open_config(config_path).current.topics.disentangle.params()
    try:
        chats = load_chats(data)
    except DataError as exc:
        raise click.UsageError(str(exc)) from None
    report, predictions = evaluate(chats, lambda: Disentangler(params))
    _print(report, as_json)
    if out is not None:  # after the report, which a file that cannot be written does not cost
        write_output(out, format_clusters(predictions))


def _print(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report, indent=1))
        return
    click.echo(f"Thread disentanglement on {report['n_files']} files, {report['n_messages']} scored messages")
    click.echo(f"  1 - scaled VI  {report['vi']:6.2f}")
    click.echo(f"  one-to-one     {report['one_to_one']:6.2f}")
    click.echo(f"  exact F1       {report['exact_f1']:6.2f}")
    click.echo(
        f"  conversations  {report['n_predicted_conversations']} predicted, "
        f"{report['n_gold_conversations']} gold"
    )
    click.echo(f"  {report['seconds']:.2f} s")
    for stem, row in report["per_file"].items():
        click.echo(
            f"    {stem:20} VI {row['vi']:6.2f}  1-1 {row['one_to_one']:6.2f}  F1 {row['exact_f1']:6.2f}"
        )


COMMANDS: list[click.Command] = [command]
