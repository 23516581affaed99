"""Learn the disentangler's feature weights from annotated IRC files, and cross-validate them.

    python -m bot.evals.train_disentangle --data ../shared/data/irc_disentanglement/dev --cv lofo
    python -m bot.evals.train_disentangle --data ../shared/data/irc_disentanglement/dev --write

Training runs the production :class:`memory.topics.Disentangler` over each file with gold threads
forced (``commit``), collects the scored options of every annotated non-system message, and fits a
log-linear model: softmax over the options, the probability of the gold thread (any option in it, or
"new thread" when no earlier message of the window is in it) maximised, with L2 regularisation
(AdaGrad). Context lines (< 1000) take their gold thread when a link reaches them, else their own.
Cross-validation trains on some files and runs the production class on the held-out ones, pooling
the held-out predictions before scoring.
"""

from __future__ import annotations

import json
import math
import random
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import click

from bot.evals.disentangle import IrcChat, evaluate, gold_clusters, load_chats, parse_links, pooled, scores
from memory.topics import DisentangleParams, Disentangler

MODEL_PATH = Path(__file__).resolve().parents[2] / "memory" / "topics" / "model.json"

# Features the IRC data cannot teach (it has no platform reply links): fixed, documented priors.
PRIORS = {"reply": 8.0}

Example = tuple[list[list[int]], list[int]]  # options as feature indices, indices of gold options


def examples_for(chat: IrcChat, annotation: Path, vocab: dict[str, int]) -> list[Example]:
    """Training examples of one file (gold threads forced while reading it)."""
    components = gold_clusters(parse_links(annotation.read_text(encoding="utf-8").splitlines()), cutoff=0)
    gold_thread = {line: f"gold{min(c)}" for c in components for line in c}
    params = DisentangleParams(weights=())
    dis = Disentangler(params)
    out: list[Example] = []
    for index, message in enumerate(chat.messages):
        thread = gold_thread.get(index, message.key)
        if index >= chat.scored_from and not message.is_system:
            options = dis.options(message)
            feats = [[vocab.setdefault(f, len(vocab)) for f in o.features] for o in options]
            positive = [i for i, o in enumerate(options) if o.thread == thread]
            earlier = any(gold_thread.get(j) == thread for j in range(index))
            if not positive and not earlier:
                positive = [0]  # the "new thread" option
            if positive:
                out.append((feats, positive))
        dis.commit(message, thread)
    return out


def fit(
    examples: list[Example], size: int, epochs: int = 40, rate: float = 0.2, l2: float = 1e-3, seed: int = 7
) -> list[float]:
    """Weights maximising the log-probability of the gold options (AdaGrad, L2)."""
    w = [0.0] * size
    g2 = [1e-8] * size
    order = list(range(len(examples)))
    rng = random.Random(seed)
    for _ in range(epochs):
        rng.shuffle(order)
        for k in order:
            options, positive = examples[k]
            scores = [sum(w[f] for f in feats) for feats in options]
            top = max(scores)
            exp = [math.exp(s - top) for s in scores]
            z = sum(exp)
            zp = sum(exp[i] for i in positive)
            grad: dict[int, float] = {}
            for i, feats in enumerate(options):
                # d(-log P(gold))/d score_i = p_i - p_i|gold
                g = exp[i] / z - (exp[i] / zp if i in positive else 0.0)
                if g == 0.0:
                    continue
                for f in feats:
                    grad[f] = grad.get(f, 0.0) + g
            for f, g in grad.items():
                g += l2 * w[f]
                g2[f] += g * g
                w[f] -= rate * g / math.sqrt(g2[f])
    return w


def train(chats: list[IrcChat], data: Path, epochs: int) -> dict[str, float]:
    """Feature weights learned from ``chats``."""
    vocab: dict[str, int] = {}
    examples: list[Example] = []
    for chat in chats:
        examples += examples_for(chat, data / f"{chat.stem}.annotation.txt", vocab)
    w = fit(examples, len(vocab), epochs=epochs)
    learned = {name: round(w[i], 4) for name, i in sorted(vocab.items()) if abs(w[i]) >= 1e-4}
    return {**learned, **PRIORS}


def held_out(chats: list[IrcChat], data: Path, folds: list[list[int]], epochs: int) -> dict[str, Any]:
    """Pooled scores of the production class on each fold's held-out files, trained on the rest."""
    gold: list[Any] = []
    pred: list[Any] = []
    for fold in folds:
        train_set = [c for i, c in enumerate(chats) if i not in fold]
        test_set = [chats[i] for i in fold]
        weights = train(train_set, data, epochs)
        params = replace(DisentangleParams(), weights=tuple(sorted(weights.items())))
        _, predictions = evaluate(test_set, partial(Disentangler, params))
        for chat in test_set:
            gold += pooled(chat.stem, chat.gold)
            pred += pooled(chat.stem, predictions[chat.stem])
    return {**scores(gold, pred), "n_messages": sum(len(c) for c in gold), "folds": len(folds)}


@click.command()
@click.option("--data", "data", type=click.Path(path_type=Path), required=True)
@click.option("--cv", type=click.Choice(["none", "lofo", "2fold"]), default="none")
@click.option("--epochs", type=int, default=40, show_default=True)
@click.option("--write/--no-write", default=False, help="Write memory/topics/model.json.")
def main(data: Path, cv: str, epochs: int, write: bool) -> None:
    """Train on all files in DATA (optionally cross-validate first)."""
    chats = load_chats(data)
    if cv != "none":
        n = len(chats)
        folds = [[i] for i in range(n)] if cv == "lofo" else [list(range(0, n, 2)), list(range(1, n, 2))]
        click.echo(json.dumps({"cv": cv, **held_out(chats, data, folds, epochs)}))
    weights = train(chats, data, epochs)
    if write:
        payload = {
            "about": "Disentangler feature weights; trained by bot/evals/train_disentangle.py on the "
            "Ubuntu IRC disentanglement dev split (Kummerfeld et al., ACL 2019, CC BY 4.0).",
            "epochs": epochs,
            "weights": weights,
        }
        MODEL_PATH.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        click.echo(f"wrote {len(weights)} weights to {MODEL_PATH}", err=True)
    params = DisentangleParams(weights=tuple(sorted(weights.items())))
    report, _ = evaluate(chats, lambda: Disentangler(params))
    report.pop("per_file")
    click.echo(json.dumps({"train_all": report}))


if __name__ == "__main__":
    sys.exit(main())
