"""Filling in missing vectors: messages in the full-text index and ChatHistory rows without a vector
for the current model (and size), a bounded batch per call. Reading, embedding and writing are
separate steps, so no write transaction waits on the model or the network.

What is embedded is bounded (`FOCUS_CHARS`, `NEIGHBOUR_CHARS`), so one huge message can never make an
endpoint refuse its batch over and over and stall the backfill behind it.

A message is embedded with the turns around it (the previous and the next message of its chat, when
they are close in time): a reply such as "the kids loved it!" means little alone. So a message waits
for its next turn, or until it has settled (`SETTLE_SECONDS`) when none comes. One dated more than
`SETTLE_SECONDS` ahead of now (a wrong clock; times up to the year 9000 are accepted) has no next
turn by time and would not settle before that date: it counts as settled at once."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.embeddings.local import EmbedderUnavailable
from memory.embeddings.store import save_vectors
from memory.messages import StoredMessage, by_ids, neighbours, turn_window, with_neighbours
from memory.models import ChatHistory, EmbeddingVector
from memory.ports import Embedder
from memory.storage import Database
from memory.storage.fts import searchable
from memory.text.truncate import truncate

log = logging.getLogger(__name__)

SETTLE_SECONDS = 600.0
FOCUS_CHARS = 2000
NEIGHBOUR_CHARS = 500
SIZE_PROBE = "群忆"  # embedded once to learn the size of an embedder that does not know it yet

# A vector of the model's name but of another size (once the embedder knows its own) is none.
_SAME_SPACE = "e.model = :model AND (:dimension = 0 OR e.dimension = :dimension)"
_MESSAGES = f"FROM messages m WHERE m.text != '' AND {searchable('m')}"


def _has_vector(kind: str, alias: str) -> str:
    """An SQL condition: row `alias` of `kind` has a vector in the model's space."""
    return (
        f"EXISTS (SELECT 1 FROM embeddings e WHERE e.kind = '{kind}' AND e.ref_id = {alias}.id "
        f"AND {_SAME_SPACE})"
    )


# A message still settling has no later one in its chat; `n.time >=` on its own gives that EXISTS a
# range on the (chat, time) index (inside the OR alone it walked the chat from its first message).
_MISSING_MESSAGES = text(
    f"SELECT m.id {_MESSAGES} AND NOT {_has_vector('message', 'm')} "
    "AND (m.time < :settled OR m.time > :wrong_clock OR EXISTS "
    "(SELECT 1 FROM messages n WHERE n.chat_id = m.chat_id AND n.time >= m.time "
    "AND (n.time > m.time OR n.id > m.id))) ORDER BY m.id LIMIT :limit"
)
_MISSING_HISTORY = text(
    f"SELECT h.id FROM chat_history h WHERE NOT {_has_vector('history', 'h')} ORDER BY h.id LIMIT :limit"
)
_PROGRESS = text(
    f"SELECT * FROM (SELECT count(*), coalesce(sum({_has_vector('message', 'm')}), 0) {_MESSAGES}), "
    f"(SELECT count(*), coalesce(sum({_has_vector('history', 'h')}), 0) FROM chat_history h)"
)


def message_document(speaker: str, body: str) -> str:
    """One turn as embedded: who said it and what they said."""
    return f"{speaker}: {body}" if speaker else body


def windowed_document(turns: Iterable[StoredMessage], focus: int | None = None) -> str:
    """What is embedded for a message: its turn window (`turn_window`), one turn a line. The message
    `focus` keeps up to `FOCUS_CHARS` characters, each other turn up to `NEIGHBOUR_CHARS`."""
    return "\n".join(
        truncate(message_document(m.speaker, m.text), FOCUS_CHARS if m.id == focus else NEIGHBOUR_CHARS)
        for m in turns
    )


def history_document(theme: str, summary: str, keywords: Iterable[str]) -> str:
    """What is embedded for a ChatHistory row: its theme, summary and keywords, as text, bounded like
    a message."""
    return truncate("\n".join([theme, summary, " ".join(str(k) for k in keywords)]), FOCUS_CHARS)


@dataclass(slots=True)
class BackfillReport:
    messages: int = 0
    histories: int = 0

    @property
    def total(self) -> int:
        return self.messages + self.histories


@dataclass(frozen=True, slots=True)
class Progress:
    """How many rows of one kind have a vector of the model (`embedded`) out of all that are to have
    one (`total`)."""

    embedded: int
    total: int

    @property
    def waiting(self) -> int:
        return self.total - self.embedded


@dataclass(frozen=True, slots=True)
class BackfillProgress:
    """How far the backfill of one model has got: searchable messages and ChatHistory rows."""

    messages: Progress
    topics: Progress

    @property
    def rows(self) -> Progress:
        """Messages and topics together."""
        return Progress(
            self.messages.embedded + self.topics.embedded, self.messages.total + self.topics.total
        )


async def backfill_progress(session: AsyncSession, model: str, dimension: int = 0) -> BackfillProgress:
    """The rows `backfill` embeds for `model` and how many of them have their vector of `dimension`
    values (one of another size waits to be embedded again). A message still settling counts as
    waiting. With `dimension` 0 (the size not known) a vector of any size under the model's name counts
    as embedded."""
    found = (await session.execute(_PROGRESS, {"model": model, "dimension": dimension})).one()
    messages, embedded_messages, topics, embedded_topics = (int(n) for n in found)
    return BackfillProgress(Progress(embedded_messages, messages), Progress(embedded_topics, topics))


async def _message_documents(session: AsyncSession, ids: Sequence[int]) -> dict[int, tuple[int, str]]:
    """(chat id, document) of each message of `ids` that exists, embedded with its turn window."""
    around = await neighbours(session, ids)
    loaded = {m.id: m for m in await by_ids(session, sorted(with_neighbours(ids, around)))}
    times = {i: m.time.timestamp() for i, m in loaded.items()}
    return {
        i: (
            loaded[i].chat_id,
            windowed_document((loaded[j] for j in turn_window(i, around.get(i, (None, None)), times)), i),
        )
        for i in ids
        if i in loaded
    }


async def _history_documents(session: AsyncSession, ids: Sequence[int]) -> dict[int, tuple[int, str]]:
    """(chat id, document) of each ChatHistory row of `ids` that exists."""
    rows = await session.scalars(select(ChatHistory).where(ChatHistory.id.in_(ids)))
    return {r.id: (r.chat_id, history_document(r.theme, r.summary, r.keywords or ())) for r in rows}


async def _embed(
    db: Database,
    embedder: Embedder,
    kind: str,
    ids: Sequence[int],
    documents: Callable[[AsyncSession, Sequence[int]], Awaitable[dict[int, tuple[int, str]]]],
) -> int:
    """Embed the rows' documents outside any transaction, then store the vectors of the rows whose
    document is still the same: a row deleted or rewritten meanwhile (forgetting, a person's memory
    deleted) gets no vector of words it no longer holds, and no vector is left for a later row
    given its id."""
    if not ids:
        return 0
    async with db.read() as session:
        before = await documents(session, ids)
    if not before:
        return 0
    embedded = await embedder.embed([doc for _, doc in before.values()])
    sizes = {len(v) for v in embedded}
    if embedder.dimension and sizes != {embedder.dimension}:
        raise EmbedderUnavailable(
            f"{embedder.model} gave vectors of {sorted(sizes)} values, not of its size {embedder.dimension}"
        )
    vectors = dict(zip(before, embedded, strict=True))
    async with db.write() as session:
        after = await documents(session, list(before))
        same = [i for i in before if after.get(i) == before[i]]
        rows = [(i, before[i][0]) for i in same]
        return await save_vectors(session, kind, embedder.model, rows, [vectors[i] for i in same])


async def _dimension(db: Database, embedder: Embedder) -> int:
    """The embedder's size (values per vector). One that does not know it yet (the `local` and `openai`
    embedders before their first use) embeds `SIZE_PROBE` to learn it when vectors of its model are
    stored: without a size every stored vector counts as embedded, and those of another size (the model
    changed under its name) waited, ignored by recall, until a row lacking a vector or a question made
    the embedder learn it. None stored: 0, and the rows to embed teach it."""
    if embedder.dimension:
        return embedder.dimension
    async with db.read() as session:
        stored = await session.scalar(
            select(EmbeddingVector.id).where(EmbeddingVector.model == embedder.model).limit(1)
        )
    if stored is None:
        return 0
    [probe] = await embedder.embed([SIZE_PROBE])
    return embedder.dimension or len(probe)


async def backfill(
    db: Database, embedder: Embedder, batch_size: int = 256, now: float | None = None
) -> BackfillReport:
    """Embed up to `batch_size` messages and `batch_size` ChatHistory rows that lack a vector
    (`now`, a Unix time, decides which last turns of a chat have settled). A vector of another size
    than the embedder's (`_dimension`) under its model name counts as lacking: the model changed under
    that name, and its rows are embedded again."""
    now = time.time() if now is None else now
    dimension = await _dimension(db, embedder)
    params = {"model": embedder.model, "dimension": dimension, "limit": batch_size}
    settling = {"settled": now - SETTLE_SECONDS, "wrong_clock": now + SETTLE_SECONDS}
    async with db.read() as session:
        message_ids = [int(r[0]) for r in await session.execute(_MISSING_MESSAGES, {**params, **settling})]
        history_ids = [int(r[0]) for r in await session.execute(_MISSING_HISTORY, params)]
    report = BackfillReport(
        await _embed(db, embedder, "message", message_ids, _message_documents),
        await _embed(db, embedder, "history", history_ids, _history_documents),
    )
    if report.total:
        log.info(
            "embedded %d messages and %d topics with %s", report.messages, report.histories, embedder.model
        )
    return report


async def backfill_all(
    db: Database, embedder: Embedder, batch_size: int = 256, now: float | None = None
) -> BackfillReport:
    """Run `backfill` until nothing is missing (for imports and evaluations)."""
    total = BackfillReport()
    while True:
        report = await backfill(db, embedder, batch_size, now)
        total.messages += report.messages
        total.histories += report.histories
        if report.total == 0:
            return total
