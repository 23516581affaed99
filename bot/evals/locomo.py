"""LoCoMo retrieval through the production recall.

Each conversation is recorded through `MemoryService.record` into a fresh temporary database (one chat
per conversation, one message per turn, time = its session's date, an image turn's caption appended as
`[image: …]`); with an embedder, vectors are backfilled as the job would. Each question is then
answered by the production recall (query time one day after the last session, scope = that chat) as a
ranked list of messages, and scored against the evidence dia_ids.

Evidence ids are read leniently ('D1:3', 'D1: 3', 'D:11:26', 'D01:03', several in one string); ids
that name no turn of the conversation are dropped, and a question left without evidence is not
scored (nothing can be retrieved for it). A recalled message that merged duplicates (same content)
stands for all of their turns at its rank. The ranking is as deep as recall's candidate pool, so
that its first 10 distinct sessions are there whenever recall found them.

Metrics (k = 5, 10): `turn_recall_all@k` / `turn_recall_any@k` — categories 1–4, questions with
evidence: share whose evidence turns are all (any) in the top k messages; `session_frac@10` — every
question with evidence: mean share of its evidence sessions among the first 10 distinct sessions of
the ranking. `per_conversation` gives the spread behind the means.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.evals.data_files import DataError, read_json
from memory.clock import ManualClock
from memory.embeddings.backfill import backfill_all
from memory.jargon.explain import JargonExplainer
from memory.ports import Embedder
from memory.recall import RecallQuery, RecallSettings
from memory.recall.glossary import JargonGlossary
from memory.recall.lexical import search_messages
from memory.recall.setup import attach_recall
from memory.service import MemoryService
from memory.storage import Database
from memory.types import ChatMessage

PLATFORM = "locomo"
RANKING_DEPTH = 100
QUESTION_EMBED_WAIT_SECONDS = 300.0
TURN_CATEGORIES = (1, 2, 3, 4)
_DIA = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)$")


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    time: datetime


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(slots=True)
class Conversation:
    sample_id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def parse_session_time(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → an aware datetime (UTC)."""
    try:
        return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError as exc:
        raise DataError(f"unreadable session date {value!r}") from exc


def evidence_ids(raw: Iterable[str]) -> tuple[str, ...]:
    """Evidence dia_ids, tolerating entries like 'D8:6; D9:17' that hold several, stray spaces or
    colons ('D1: 3', 'D:11:26') and leading zeros; each id once, in order."""
    found = (f"D{int(s)}:{int(t)}" for item in raw for s, t in _DIA.findall(str(item)))
    return tuple(dict.fromkeys(found))


def load_conversations(path: Path) -> list[Conversation]:
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(f"{path} should hold a list of conversations")
    try:
        conversations = [_conversation(item, i) for i, item in enumerate(data)]
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{path}: unexpected conversation shape ({exc!r})") from exc
    first: dict[str, int] = {}
    for position, conv in enumerate(conversations):
        earlier = first.setdefault(conv.sample_id, position)
        if earlier != position:  # `per_conversation` is keyed by it: one would hide the other
            raise DataError(
                f"{path}: conversations {earlier} and {position} share the sample_id {conv.sample_id!r}"
            )
    return conversations


def _conversation(item: dict[str, Any], position: int) -> Conversation:
    """One LoCoMo conversation: its turns in session order and its questions."""
    conv = item["conversation"]
    out = Conversation(str(item.get("sample_id", position)))
    sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k)))
    for n in sessions:
        when = parse_session_time(conv[f"session_{n}_date_time"])
        for turn in conv[f"session_{n}"]:
            body = str(turn.get("text", ""))
            if turn.get("blip_caption"):
                body = f"{body} [image: {turn['blip_caption']}]".strip()
            made = Turn(_turn_id(turn["dia_id"]), turn["speaker"], body, when)
            to_message(out.sample_id, made)  # refuses what could not be recorded (InvalidMessage)
            out.turns.append(made)
    turns = {t.dia_id for t in out.turns}
    for qa in item.get("qa", []):
        evidence = tuple(d for d in evidence_ids(qa.get("evidence", [])) if d in turns)
        out.questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
    return out


def _turn_id(raw: object) -> str:
    """A turn's dia_id read as evidence ids are ('D01:03' is 'D1:3'); anything else is a DataError
    (scoring reads the session from it)."""
    found = evidence_ids([raw]) if isinstance(raw, str) else ()
    if len(found) != 1:
        raise DataError(f"turn id {raw!r} is not of the form 'D<session>:<turn>'")
    return found[0]


def session_of(dia_id: str) -> int:
    return int(_DIA.match(dia_id).group(1))  # type: ignore[union-attr]


def score_ranking(ranking: Sequence[str | Sequence[str]], evidence: Sequence[str]) -> dict[str, float]:
    """One question's scores for a ranked list of messages, each a dia_id or the dia_ids of the
    turns it stands for (a merged duplicate: its own turn first)."""
    groups = [(item,) if isinstance(item, str) else tuple(item) for item in ranking]
    gold = set(evidence)
    scores = {}
    for k in (5, 10):
        top = {dia for group in groups[:k] for dia in group}
        scores[f"turn_recall_all@{k}"] = float(gold <= top)
        scores[f"turn_recall_any@{k}"] = float(bool(gold & top))
    sessions: list[int] = []
    for dia in (dia for group in groups for dia in group):
        s = session_of(dia)
        if s not in sessions:
            sessions.append(s)
        if len(sessions) == 10:
            break
    gold_sessions = {session_of(d) for d in gold}
    scores["session_frac@10"] = len(gold_sessions & set(sessions)) / len(gold_sessions)
    return scores


TURN_KEYS = ("turn_recall_all@5", "turn_recall_all@10", "turn_recall_any@5", "turn_recall_any@10")
CONVERSATION_KEYS = ("turn_recall_all@10", "session_frac@10", "n_questions")


def summarize(rows: list[tuple[int, dict[str, float]]]) -> dict[str, Any]:
    """Means over questions: turn metrics on categories 1–4, session_frac on all with evidence."""

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 4) if values else 0.0

    turn_rows = [s for c, s in rows if c in TURN_CATEGORIES]
    report: dict[str, Any] = {key: mean([s[key] for s in turn_rows]) for key in TURN_KEYS}
    report["session_frac@10"] = mean([s["session_frac@10"] for _, s in rows])
    report["n_questions"] = len(rows)
    report["n_turn_questions"] = len(turn_rows)
    per_category: dict[str, Any] = {}
    for category in sorted({c for c, _ in rows}):
        mine = [s for c, s in rows if c == category]
        entry: dict[str, Any] = {
            "n_questions": len(mine),
            "session_frac@10": mean([s["session_frac@10"] for s in mine]),
        }
        if category in TURN_CATEGORIES:
            entry.update({key: mean([s[key] for s in mine]) for key in TURN_KEYS})
        per_category[str(category)] = entry
    report["per_category"] = per_category
    return report


def to_message(sample_id: str, turn: Turn) -> ChatMessage:
    return ChatMessage(
        platform=PLATFORM,
        chat_id=sample_id,
        message_id=turn.dia_id,
        sender_id=turn.speaker,
        sender_name=turn.speaker,
        text=turn.text,
        time=turn.time,
    )


def _turns(ranked: Sequence[tuple[int, ...]], dia_of: dict[int, str]) -> list[tuple[str, ...]]:
    """Ranked message ids (each with its merged duplicates) as the dia_ids of their turns."""
    groups = [tuple(dia_of[i] for i in ids if i in dia_of) for ids in ranked]
    return [g for g in groups if g]


Ranker = Callable[[MemoryService, int, Question, datetime, int], Any]


async def _hybrid(
    memory: MemoryService, chat_id: int, question: Question, now: datetime, depth: int
) -> list[tuple[int, ...]]:
    hits = await memory.recall(RecallQuery(question.text, (chat_id,), now, limit=depth))
    return [(h.id, *h.duplicates) for h in hits if h.kind == "message"]


async def _bm25(
    memory: MemoryService, chat_id: int, question: Question, now: datetime, depth: int
) -> list[tuple[int, ...]]:
    return [(m.id,) for m, _ in await search_messages(memory.db, [chat_id], question.text, depth)]


async def evaluate(
    conversations: Sequence[Conversation],
    settings: RecallSettings | None = None,
    embedder: Embedder | None = None,
    baseline: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Record, backfill and query every conversation; the JSON report (`baseline` adds plain BM25)."""
    # LoCoMo's times name no zone and are read as UTC: days are counted in that same zone, whatever
    # the machine's, so that the numbers do not depend on where the eval runs.
    # A question's vector is waited for: a bot's short timeout guards its reply time, while here a
    # loaded machine would otherwise turn some questions lexical, and the numbers with them.
    settings = dataclasses.replace(
        settings or RecallSettings(), timezone=None, query_embed_timeout_seconds=QUESTION_EMBED_WAIT_SECONDS
    )
    # Recall keeps its candidate pool whatever the limit up to that size, so a ranking this deep has
    # the same top as production's and reaches as many sessions as recall found.
    depth = max(RANKING_DEPTH, settings.candidates)
    started = time.perf_counter()
    rows: list[tuple[int, dict[str, float]]] = []
    base_rows: list[tuple[int, dict[str, float]]] = []
    timings = {"record": 0.0, "embed": 0.0, "recall": 0.0}
    per_conversation: dict[str, dict[str, Any]] = {}
    for conv in conversations:
        with tempfile.TemporaryDirectory(prefix="qunyi-locomo-") as tmp:
            db = await Database.open(Path(tmp))
            try:
                # A conversation without turns has no question with evidence: nothing is asked.
                now = max((t.time for t in conv.turns), default=datetime.now(UTC)) + timedelta(days=1)
                memory = MemoryService(db, ManualClock(now))
                glossary = JargonGlossary(JargonExplainer(db))  # as in the app; LoCoMo has no slang
                attach_recall(memory, settings, embedder, glossary=glossary)
                t0 = time.perf_counter()
                dia_of: dict[int, str] = {}
                chat_id = 0
                for turn in conv.turns:
                    recorded = await memory.record(to_message(conv.sample_id, turn))
                    dia_of[recorded.message_id] = turn.dia_id
                    chat_id = recorded.chat_id
                t1 = time.perf_counter()
                if embedder is not None:
                    await backfill_all(db, embedder)
                t2 = time.perf_counter()
                mine: list[tuple[int, dict[str, float]]] = []
                for question in conv.questions:
                    if not question.evidence:
                        continue
                    ranked = _turns(await _hybrid(memory, chat_id, question, now, depth), dia_of)
                    mine.append((question.category, score_ranking(ranked, question.evidence)))
                    if baseline:
                        plain = _turns(await _bm25(memory, chat_id, question, now, depth), dia_of)
                        base_rows.append((question.category, score_ranking(plain, question.evidence)))
                rows.extend(mine)
                per_conversation[conv.sample_id] = {
                    k: v for k, v in summarize(mine).items() if k in CONVERSATION_KEYS
                }
                t3 = time.perf_counter()
                timings["record"] += t1 - t0
                timings["embed"] += t2 - t1
                timings["recall"] += t3 - t2
                if progress is not None:
                    progress(f"{conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} questions")
            finally:
                await db.close()
    report = summarize(rows)
    report["embedder"] = "none" if embedder is None else embedder.model
    report["n_conversations"] = len(conversations)
    report["per_conversation"] = per_conversation
    if baseline:
        report["baseline_bm25"] = {k: v for k, v in summarize(base_rows).items() if k != "per_category"}
    report["timings"] = {k: round(v, 2) for k, v in timings.items()}
    report["seconds"] = round(time.perf_counter() - started, 2)
    return report
