"""Jargon discovery evaluation: slang examples hidden in ordinary group chat, mined on the job cadence.

The stream: every example sentence of every gold term is one message; real casual chat (LCCC
dialogues, each kept as consecutive turns) is interleaved at random with a fixed seed; speakers come
from a small pool; time advances by random gaps (about a minute) with a night pause every few
hundred messages, so the stream spans days.

The cadence loop replays the stream in simulated time and calls a miner exactly as the scheduled job
will: when at least `cooldown` seconds passed since the last run and at least `min_new` messages
arrived, the miner gets the new messages (the window); its history is the last `history_size`
messages. Candidates are upserted into a dictionary keyed by normalised content whose `count` is the
number of distinct evidence messages collected over all runs (what the DB upsert will keep).

"Mined" = dictionary entries whose count reached `min_count` (default 2, the first meaning-inference
threshold): the entries the production dictionary would put up for inference and review. A mined
term matches a gold term when both are equal after NFKC, lower-casing and trimming.

`evaluate_job` runs the production job instead (`tasks.jargon_mining`, offline path) on a fresh
temporary database: messages are recorded through MemoryService and the job ticks on its own
interval in simulated time, deciding the cadence itself; "mined" is read from the `jargon` table,
whose count is the same number of distinct evidence messages. `evaluate` with another `Miner`
(anything with `run(window) -> candidates`) measures a miner alone.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import tempfile
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from bot.evals.data_files import DataError, read_json
from memory.jargon import dictionary
from memory.jargon.types import Candidate, MinerMessage
from memory.service import MemoryService
from memory.storage import Database
from memory.types import ChatMessage
from tasks.jargon_mining import JargonMiningJob, MiningSettings

INFERENCE_THRESHOLDS = (2, 4, 8, 12, 24, 60, 100)


def gold_key(term: str) -> str:
    """The form in which mined and gold terms are compared: NFKC, lower-cased, trimmed."""
    return unicodedata.normalize("NFKC", term).lower().strip()


@dataclass(frozen=True, slots=True)
class StreamMessage:
    """One message of the simulated chat: `at` is seconds since the stream start."""

    message: MinerMessage
    at: float
    term: str | None = None  # the gold term whose example this is (None for filler)


def load_terms(path: Path) -> dict[str, list[str]]:
    """`{term: {"example": [sentences]}}` → `{term: sentences}` (terms without examples kept)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected an object of terms")
    terms: dict[str, list[str]] = {}
    for term, entry in data.items():
        if entry is not None and not isinstance(entry, dict):
            raise DataError(
                f"{path}: term {term!r} should be an object with an 'example' list, "
                f"not {type(entry).__name__}"
            )
        examples = (entry or {}).get("example", [])
        if isinstance(examples, str):  # one sentence, not a list of characters
            examples = [examples]
        terms[str(term)] = [str(s) for s in examples if str(s).strip()]
    return terms


def load_filler(path: Path) -> list[list[str]]:
    """LCCC dialogues (every split) with each utterance's space-separated characters joined."""
    data = read_json(path)
    splits = data.items() if isinstance(data, dict) else [(0, data)]
    dialogues: list[list[str]] = []
    for name, split in splits:
        if not isinstance(split, list):
            raise DataError(f"{path}: split {name!r} is not a list of dialogues")
        for number, dialogue in enumerate(split, 1):
            if not isinstance(dialogue, list):  # a string would be read a character a turn
                raise DataError(f"{path}: dialogue {number} of split {name!r} is not a list of turns")
            turns = ["".join(str(turn).split()) for turn in dialogue]
            turns = [t for t in turns if t]
            if turns:
                dialogues.append(turns)
    return dialogues


def split_terms(
    terms: dict[str, list[str]], half: int | None, seed: int, limit: int | None = None
) -> dict[str, list[str]]:
    """All terms, or one of two fixed random halves (`half` 0 = tuning, 1 = held out), or the
    first `limit` of a fixed random order (a quick smoke run)."""
    names = sorted(terms)
    random.Random(seed).shuffle(names)
    if half is not None:
        names = names[half::2]
    if limit is not None:
        names = names[:limit]
    chosen = set(names)
    return {t: s for t, s in terms.items() if t in chosen}


def build_stream(
    terms: dict[str, list[str]],
    filler: Sequence[Sequence[str]],
    seed: int = 0,
    n_speakers: int = 12,
    mean_gap: float = 60.0,
    night_every: int = 400,
    night_gap: float = 8 * 3600.0,
) -> list[StreamMessage]:
    """Interleave term examples (one message each) with filler dialogues, over simulated days."""
    rng = random.Random(seed)
    speakers = [f"user{i:02d}" for i in range(n_speakers)]
    units: list[list[tuple[str, str | None]]] = [[(s, term)] for term, ss in terms.items() for s in ss]
    units += [[(turn, None) for turn in dialogue] for dialogue in filler]
    rng.shuffle(units)
    stream: list[StreamMessage] = []
    now = 0.0
    for unit in units:
        pair = rng.sample(speakers, 2)
        for turn_no, (text, term) in enumerate(unit):
            now += rng.expovariate(1 / mean_gap)
            if stream and len(stream) % night_every == 0:
                now += night_gap
            speaker = pair[turn_no % 2] if term is None else rng.choice(speakers)
            message = MinerMessage(key=f"m{len(stream)}", text=text, speaker=speaker)
            stream.append(StreamMessage(message, now, term))
    return stream


class Miner(Protocol):
    """What the cadence loop drives: one call per job run with the new messages."""

    def run(self, window: Sequence[MinerMessage]) -> list[Candidate]: ...


@dataclass(slots=True)
class Entry:
    """One dictionary row: first spelling, distinct evidence messages, runs that proposed it."""

    content: str
    evidence: set[str] = field(default_factory=set)
    runs: int = 0

    @property
    def count(self) -> int:
        """Occurrences collected so far (distinct evidence messages)."""
        return len(self.evidence)


class InMemoryDictionary:
    """The dictionary upsert of the production job, kept in memory (keyed by normalised content)."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}

    def upsert(self, candidates: Iterable[Candidate]) -> None:
        """Count each candidate's new evidence under its normalised content."""
        for cand in candidates:
            entry = self.entries.setdefault(gold_key(cand.content), Entry(cand.content))
            entry.evidence.update(cand.message_keys)
            entry.runs += 1

    def mined(self, min_count: int) -> dict[str, Entry]:
        """Entries whose count reached `min_count`."""
        return {k: e for k, e in self.entries.items() if e.count >= min_count}


@dataclass(frozen=True, slots=True)
class Cadence:
    """When the job runs: `cooldown` seconds since the last run and `min_new` new messages."""

    cooldown: float = 20.0
    min_new: int = 10


@dataclass(slots=True)
class Replay:
    """What a replay did: runs, their durations, and the resulting dictionary."""

    dictionary: InMemoryDictionary
    runs: int = 0
    run_seconds: list[float] = field(default_factory=list)


def replay(stream: Sequence[StreamMessage], miner: Miner, cadence: Cadence) -> Replay:
    """Feed the stream to `miner` on the job cadence; a last run takes what is pending at the end."""
    result = Replay(InMemoryDictionary())
    pending: list[MinerMessage] = []
    last_run = -float("inf")

    def run_once() -> None:
        started = time.perf_counter()
        candidates = miner.run(pending)
        result.run_seconds.append(time.perf_counter() - started)
        result.runs += 1
        result.dictionary.upsert(candidates)
        pending.clear()

    for item in stream:
        pending.append(item.message)
        if item.at - last_run >= cadence.cooldown and len(pending) >= cadence.min_new:
            run_once()
            last_run = item.at
    if len(pending) >= cadence.min_new:
        run_once()
    return result


def score(mined: Iterable[str], gold: Iterable[str]) -> dict[str, float]:
    """Precision, recall and F1 of mined against gold terms (both compared by `gold_key`)."""
    mined_set = {gold_key(t) for t in mined}
    gold_set = {gold_key(t) for t in gold}
    hits = len(mined_set & gold_set)
    precision = hits / len(mined_set) if mined_set else 0.0
    recall = hits / len(gold_set) if gold_set else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


def report(
    stream: Sequence[StreamMessage],
    terms: dict[str, list[str]],
    result: Replay,
    min_count: int,
    seconds: float,
    samples: int = 25,
) -> dict[str, Any]:
    """The JSON report: scores, sizes, timings, recall by number of examples, samples of errors."""
    mined = result.dictionary.mined(min_count)
    gold = {gold_key(t): t for t in terms}
    out: dict[str, Any] = score(mined, gold)
    by_examples: dict[str, list[int]] = {}
    for key, term in gold.items():
        n = len(terms[term])
        bucket = "1" if n == 1 else "2-4" if n <= 4 else "5-9" if n <= 9 else "10+"
        by_examples.setdefault(bucket, [0, 0])
        by_examples[bucket][0] += key in mined
        by_examples[bucket][1] += 1
    false_pos = sorted((e for k, e in mined.items() if k not in gold), key=lambda e: -e.count)
    misses = sorted(gold[k] for k in gold if k not in mined)
    runs = sorted(result.run_seconds)
    out.update(
        n_terms=len(gold),
        n_mined=len(mined),
        n_dictionary=len(result.dictionary.entries),
        min_count=min_count,
        n_messages=len(stream),
        n_term_messages=sum(1 for m in stream if m.term is not None),
        days=round(stream[-1].at / 86400, 2) if stream else 0.0,
        runs=result.runs,
        run_seconds_mean=round(sum(runs) / len(runs), 4) if runs else 0.0,
        run_seconds_p95=round(runs[int(0.95 * (len(runs) - 1))], 4) if runs else 0.0,
        seconds=round(seconds, 2),
        recall_by_examples={k: f"{h}/{n}" for k, (h, n) in sorted(by_examples.items())},
        false_positives=[f"{e.content}×{e.count}" for e in false_pos[:samples]],
        misses=misses[:samples],
    )
    return out


def evaluate(
    terms: dict[str, list[str]],
    filler: Sequence[Sequence[str]],
    miner: Miner,
    seed: int = 0,
    cadence: Cadence | None = None,
    min_count: int = 2,
) -> dict[str, Any]:
    """Build the stream, replay it through `miner` and return the report."""
    started = time.perf_counter()
    stream = build_stream(terms, filler, seed=seed)
    result = replay(stream, miner, cadence or Cadence())
    return report(stream, terms, result, min_count, time.perf_counter() - started)


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """A dictionary row read back from the database after a production-job replay."""

    content: str
    count: int


@dataclass(slots=True)
class StoredDictionary:
    """The production dictionary's entries keyed like the in-memory one (by `gold_key`)."""

    entries: dict[str, StoredEntry] = field(default_factory=dict)

    def mined(self, min_count: int) -> dict[str, StoredEntry]:
        """Entries whose count reached `min_count`."""
        return {k: e for k, e in self.entries.items() if e.count >= min_count}


EVAL_START = datetime(2026, 1, 1, tzinfo=UTC)


def _chat_message(item: StreamMessage) -> ChatMessage:
    m = item.message
    when = EVAL_START + timedelta(seconds=item.at)
    return ChatMessage("eval", "eval", m.key, m.speaker, m.text, when, sender_name=m.speaker)


async def replay_job(
    stream: Sequence[StreamMessage],
    cadence: Cadence,
    history_size: int,
    data_dir: Path,
    base: MiningSettings | None = None,
) -> tuple[Replay, StoredDictionary]:
    """Replay the stream through the production job (offline path) on a fresh database in `data_dir`.

    Messages are recorded through MemoryService; the job ticks on its own interval in simulated time
    and applies its per-chat cooldown and minimum of new messages itself.
    """
    db = await Database.open(data_dir)
    try:
        memory = MemoryService(db)
        settings = dataclasses.replace(
            base or MiningSettings(),
            cooldown_seconds=cadence.cooldown,
            min_new_messages=cadence.min_new,
            history_messages=history_size,
            max_window_messages=max(500, cadence.min_new),
        )
        job = JargonMiningJob(db, lambda: settings)
        tick = job.spec().interval()
        result = Replay(InMemoryDictionary())
        pending: list[ChatMessage] = []
        next_tick: datetime | None = None

        since_run = 0  # messages recorded or pending since the job last mined

        async def run_at(now: datetime) -> None:
            nonlocal since_run
            if pending:
                await memory.record_many(pending)
                pending.clear()
            started = time.perf_counter()
            report = await job.run(now)
            if report.chats:
                result.run_seconds.append(time.perf_counter() - started)
                result.runs += report.chats
                since_run = 0

        for item in stream:
            message = _chat_message(item)
            pending.append(message)
            since_run += 1
            # A tick with fewer new messages than the job's minimum is a certain no-op: skip it (and
            # the write of the messages, which then go in one batch) to keep the replay fast.
            if (next_tick is None or message.time >= next_tick) and since_run >= cadence.min_new:
                await run_at(message.time)
                next_tick = message.time + tick
        end = EVAL_START + timedelta(seconds=(stream[-1].at if stream else 0) + cadence.cooldown)
        await run_at(end)
        stored = StoredDictionary()
        async with db.read() as session:
            for entry in await dictionary.list_entries(session, limit=None):
                stored.entries.setdefault(gold_key(entry.content), StoredEntry(entry.content, entry.count))
        return result, stored
    finally:
        await db.close()


def evaluate_job(
    terms: dict[str, list[str]],
    filler: Sequence[Sequence[str]],
    seed: int = 0,
    cadence: Cadence | None = None,
    min_count: int = 2,
    history_size: int = 3000,
    base: MiningSettings | None = None,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    """Like `evaluate`, but through the production DB-backed job, on a temporary database unless
    `data_dir` names one to keep; `base` carries the job settings from the config."""
    started = time.perf_counter()
    stream = build_stream(terms, filler, seed=seed)
    with tempfile.TemporaryDirectory(prefix="qunyi-eval-jargon-") as tmp:
        where = data_dir if data_dir is not None else Path(tmp)
        result, stored = asyncio.run(replay_job(stream, cadence or Cadence(), history_size, where, base))
    result.dictionary = stored  # type: ignore[assignment]
    return report(stream, terms, result, min_count, time.perf_counter() - started)
