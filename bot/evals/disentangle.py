"""Conversation-disentanglement evaluation on the Ubuntu IRC data (Kummerfeld et al., ACL 2019).

Each ``*.raw.txt`` file is one chat. Every line (system lines included) is fed, in order, to the
production :class:`memory.topics.Disentangler` as a live message. As in the dataset's own
``graph_to_cluster`` tool, the first scored line is the smallest annotated message (the later end of a
link) — line 1000 in every released file — and earlier lines are context. Gold conversations are the
connected components of the ``*.annotation.txt`` links (context lines included while linking),
restricted to scored lines. Metrics, pooled over all files:

- ``vi``: 100 · (1 − VI / log2 n), VI the variation of information, n the number of scored messages;
- ``one_to_one``: percent of messages covered by the best one-to-one matching of predicted to gold
  conversations (Hungarian assignment);
- ``exact_f1``: F1 of predicted conversations that equal a gold conversation exactly, conversations of
  one message left out on both sides.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from bot.evals.data_files import DataError, read_text
from memory.topics import Disentangler, ThreadMessage

SCORED_FROM = 1000  # the first scored line of the released files
_STEM_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_STAMP = re.compile(r"^\[(\d{2}):(\d{2})\]\s(.*)$")
_RENAME = re.compile(r"^(\S+) is now known as (\S+)")

Cluster = frozenset[Hashable]
_Node = TypeVar("_Node", bound=Hashable)


@dataclass(frozen=True, slots=True)
class IrcChat:
    """One annotated IRC file: its messages in order and the gold conversations of scored lines."""

    stem: str
    messages: tuple[ThreadMessage, ...]
    gold: tuple[frozenset[int], ...]
    scored_from: int = SCORED_FROM


def parse_raw(lines: Sequence[str], day: date) -> list[ThreadMessage]:
    """IRC log lines as messages keyed by 0-based line number; ``[HH:MM]`` wraps past midnight.

    System lines (``=== …``) carry no time and take the previous message's time.
    """
    messages: list[ThreadMessage] = []
    base = datetime(day.year, day.month, day.day, tzinfo=UTC)
    days = 0
    last_minute: int | None = None
    current = base
    for index, raw in enumerate(lines):
        line = raw.rstrip("\n")
        stamp = _STAMP.match(line)
        if stamp is None:
            body = line[3:].strip() if line.startswith("===") else line.strip()
            speaker = body.split(" ", 1)[0] if body else ""
            names = [speaker]
            renamed = _RENAME.match(body)
            if renamed:
                names.append(renamed.group(2))
            messages.append(ThreadMessage(str(index), current, speaker, tuple(names), body, is_system=True))
            continue
        minute = int(stamp.group(1)) * 60 + int(stamp.group(2))
        if last_minute is not None and minute < last_minute:
            days += 1
        last_minute = minute
        current = base + timedelta(days=days, minutes=minute)
        speaker, text = _speaker_and_text(stamp.group(3))
        messages.append(ThreadMessage(str(index), current, speaker, (speaker,), text))
    return messages


def _speaker_and_text(rest: str) -> tuple[str, str]:
    rest = rest.strip()
    if rest.startswith("<"):
        end = rest.find(">")
        if end > 0:
            return rest[1:end], rest[end + 1 :].strip()
    if rest.startswith("*"):  # an action line: "* nick does something"
        parts = rest[1:].strip().split(" ", 1)
        return parts[0], rest
    return "", rest


def parse_links(annotation_lines: Iterable[str]) -> list[tuple[int, int]]:
    """Annotated links as (later line, earlier line); a self-link starts a conversation."""
    links = []
    for number, line in enumerate(annotation_lines, 1):
        parts = line.split()
        if not parts:
            continue
        try:
            a, b = int(parts[0]), int(parts[1])
            if a < 0 or b < 0:  # a line number; Python would count a negative one from the end
                raise ValueError(line)
        except (IndexError, ValueError):
            raise DataError(f"annotation line {number} is not 'i j -': {line.strip()!r}") from None
        links.append((max(a, b), min(a, b)))
    return links


def first_scored(links: Sequence[tuple[int, int]]) -> int:
    """The first scored line: the smallest message whose own links were annotated."""
    return min((later for later, _ in links), default=SCORED_FROM)


def gold_clusters(links: Sequence[tuple[int, int]], cutoff: int) -> list[frozenset[int]]:
    """Connected components of the annotated links, keeping only lines ``>= cutoff``."""
    groups: dict[int, set[int]] = defaultdict(set)
    for node, root in components(links).items():
        if node >= cutoff:
            groups[root].add(node)
    return sorted((frozenset(g) for g in groups.values()), key=min)


def components(edges: Iterable[tuple[_Node, _Node]]) -> dict[_Node, _Node]:
    """Union-find: every node of ``edges`` mapped to the representative of its connected part."""
    parent: dict[_Node, _Node] = {}

    def find(x: _Node) -> _Node:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        parent[find(a)] = find(b)
    return {node: find(node) for node in list(parent)}


_NO_DAY = date(2000, 1, 1)


def _day(stem: str) -> date:
    """The day a file's name starts with ("2004-11-15_03"); _NO_DAY for a name that names none."""
    found = _STEM_DATE.match(stem)
    try:
        return date(int(found[1]), int(found[2]), int(found[3])) if found else _NO_DAY
    except ValueError:  # shaped like a date but none ("2004-13-45")
        return _NO_DAY


def load_chats(data_dir: Path) -> list[IrcChat]:
    """Every ``*.raw.txt`` with its ``*.annotation.txt`` in ``data_dir``, sorted by name."""
    if not data_dir.is_dir():
        raise DataError(f"data directory not found: {data_dir}")
    raws = sorted(data_dir.glob("*.raw.txt"))
    if not raws:
        raise DataError(f"no *.raw.txt files in {data_dir}")
    chats = []
    for raw in raws:
        stem = raw.name.removesuffix(".raw.txt")
        annotation = raw.with_name(f"{stem}.annotation.txt")
        if not annotation.is_file():
            raise DataError(f"missing annotation file for {raw.name}: {annotation.name}")
        lines = read_text(raw, undecodable="replace").splitlines()
        annotated = read_text(annotation).splitlines()
        messages = parse_raw(lines, _day(stem))
        try:
            links = parse_links(annotated)
        except DataError as exc:
            raise DataError(f"{annotation.name}: {exc}") from None
        if any(later >= len(messages) for later, _ in links):
            raise DataError(f"{annotation.name} links a line past the end of {raw.name}")
        cutoff = first_scored(links)
        chats.append(IrcChat(stem, tuple(messages), tuple(gold_clusters(links, cutoff)), cutoff))
    return chats


def predict(chat: IrcChat, disentangler: Any) -> list[frozenset[int]]:
    """Feed every message of ``chat`` in order; predicted conversations over the scored lines."""
    threads: dict[str, set[int]] = defaultdict(set)
    for index, message in enumerate(chat.messages):
        thread = disentangler.assign(message)
        if index >= chat.scored_from:
            threads[thread].add(index)
    return sorted((frozenset(t) for t in threads.values()), key=min)


# --- metrics -------------------------------------------------------------------------------------


def _contingency(gold: Sequence[Cluster], pred: Sequence[Cluster]) -> dict[tuple[int, int], int]:
    where = {item: g for g, cluster in enumerate(gold) for item in cluster}
    table: Counter[tuple[int, int]] = Counter()
    for p, cluster in enumerate(pred):
        for item in cluster:
            if item not in where:
                raise ValueError(f"predicted item {item!r} is not in the gold clustering")
            table[where[item], p] += 1
    return dict(table)


def vi_score(gold: Sequence[Cluster], pred: Sequence[Cluster]) -> float:
    """100 · (1 − VI / log2 n): 100 is identical clusterings; both must cover the same n items."""
    n = sum(len(c) for c in gold)
    if n != sum(len(c) for c in pred):
        raise ValueError("gold and predicted clusterings cover different numbers of items")
    if n <= 1:
        return 100.0
    table = _contingency(gold, pred)
    gold_sizes = [len(c) for c in gold]
    pred_sizes = [len(c) for c in pred]
    vi = 0.0
    for (g, p), count in table.items():
        # VI = -Σ r_ij (log r_ij/p_i + log r_ij/q_j)
        r = count / n
        vi -= r * (math.log2(count / gold_sizes[g]) + math.log2(count / pred_sizes[p]))
    return 100.0 * (1.0 - vi / math.log2(n))


def one_to_one(gold: Sequence[Cluster], pred: Sequence[Cluster]) -> float:
    """Percent of items kept by the best one-to-one pairing of gold and predicted clusters."""
    n = sum(len(c) for c in gold)
    if n == 0:
        return 100.0
    table = _contingency(gold, pred)
    # The pairing splits into independent blocks: connected parts of the overlap graph.
    root = components((("g", g), ("p", p)) for g, p in table)
    blocks: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for g, p in table:
        blocks[root["g", g]].append((g, p))
    matched = 0
    for cells in blocks.values():
        rows = sorted({g for g, _ in cells})
        cols = sorted({p for _, p in cells})
        weight = [[table.get((g, p), 0) for p in cols] for g in rows]
        matched += max_weight_matching(weight)
    return 100.0 * matched / n


def max_weight_matching(weight: Sequence[Sequence[int]]) -> int:
    """Total weight of a maximum-weight assignment in a rectangular non-negative matrix.

    Hungarian algorithm with potentials, O(r² c) for r ≤ c (the matrix is transposed if needed).
    """
    if not weight or not weight[0]:
        return 0
    rows = [list(r) for r in weight]
    if len(rows) > len(rows[0]):
        rows = [list(col) for col in zip(*rows, strict=True)]
    n, m = len(rows), len(rows[0])
    top = max(max(r) for r in rows)
    cost = [[top - v for v in r] for r in rows]  # minimise cost = maximise weight
    inf = float("inf")
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    owner = [0] * (m + 1)  # owner[j] = row matched to column j (1-based, 0 = none)
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        owner[0] = i
        j0 = 0
        minv = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = owner[j0]
            delta = inf
            j1 = 0
            row = cost[i0 - 1]
            for j in range(1, m + 1):
                if not used[j]:
                    cur = row[j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    return sum(rows[owner[j] - 1][j - 1] for j in range(1, m + 1) if owner[j])


def exact_f1(gold: Sequence[Cluster], pred: Sequence[Cluster]) -> float:
    """Percent F1 of exactly matching conversations, single-message ones left out on both sides."""
    gold_set = {c for c in gold if len(c) > 1}
    pred_set = {c for c in pred if len(c) > 1}
    hits = len(gold_set & pred_set)
    if hits == 0:
        return 0.0
    precision = hits / len(pred_set)
    recall = hits / len(gold_set)
    return 100.0 * 2 * precision * recall / (precision + recall)


def scores(gold: Sequence[Cluster], pred: Sequence[Cluster]) -> dict[str, float]:
    """The three headline metrics, rounded to two decimals."""
    return {
        "vi": round(vi_score(gold, pred), 2),
        "one_to_one": round(one_to_one(gold, pred), 2),
        "exact_f1": round(exact_f1(gold, pred), 2),
    }


# --- the run -------------------------------------------------------------------------------------


def pooled(stem: str, clusters: Iterable[frozenset[int]]) -> list[Cluster]:
    """Clusters of one file as (stem, line) items, so files can be pooled."""
    return [frozenset((stem, line) for line in c) for c in clusters]


def evaluate(
    chats: Sequence[IrcChat], make: Callable[[], Any] = Disentangler
) -> tuple[dict[str, Any], dict[str, list[frozenset[int]]]]:
    """Run a fresh disentangler per chat; the report (pooled and per-file) and the predictions."""
    started = time.perf_counter()
    predictions: dict[str, list[frozenset[int]]] = {}
    per_file: dict[str, dict[str, float]] = {}
    all_gold: list[Cluster] = []
    all_pred: list[Cluster] = []
    for chat in chats:
        pred = predict(chat, make())
        predictions[chat.stem] = pred
        per_file[chat.stem] = {**scores(chat.gold, pred), "n_messages": sum(len(c) for c in chat.gold)}
        all_gold += pooled(chat.stem, chat.gold)
        all_pred += pooled(chat.stem, pred)
    report: dict[str, Any] = {
        **scores(all_gold, all_pred),
        "n_messages": sum(len(c) for c in all_gold),
        "n_files": len(chats),
        "n_gold_conversations": len(all_gold),
        "n_predicted_conversations": len(all_pred),
        "seconds": round(time.perf_counter() - started, 3),
        "per_file": per_file,
    }
    return report, predictions


def format_clusters(predictions: dict[str, list[frozenset[int]]]) -> str:
    """Predicted conversations in the ``gold.dev.clusters.txt`` format: ``<stem>:<line> <line> …``."""
    out = []
    for stem, clusters in predictions.items():
        for cluster in clusters:
            out.append(f"{stem}:" + " ".join(str(line) for line in sorted(cluster)))
    return "\n".join(out) + "\n"


class FloorHeuristic:
    """The reference floor: link to the last message of a nick named in the text, else to the
    speaker's own message of the last three minutes, else start a new conversation."""

    def __init__(self) -> None:
        self._last_by_speaker: dict[str, tuple[datetime, str]] = {}
        self._thread: dict[str, str] = {}

    def assign(self, message: ThreadMessage) -> str:
        """The thread of ``message`` under the floor rules."""
        thread = message.key
        if not message.is_system:
            lowered = message.text.lower()
            named = [
                (when, key)
                for nick, (when, key) in self._last_by_speaker.items()
                if nick != message.speaker
                and nick
                and re.search(rf"(?<![\w]){re.escape(nick.lower())}(?![\w])", lowered)
            ]
            own = self._last_by_speaker.get(message.speaker)
            if named:
                thread = self._thread[max(named)[1]]
            elif own and message.time - own[0] <= timedelta(minutes=3):
                thread = self._thread[own[1]]
            self._last_by_speaker[message.speaker] = (message.time, message.key)
        self._thread[message.key] = thread
        return thread
