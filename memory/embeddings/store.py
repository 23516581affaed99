"""The `embeddings` table: save vectors, load a chat's vectors (cached until they change), and a
brute-force cosine top-k over them with numpy (fine for the tens of thousands of rows of a chat)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from sqlalchemy import ColumnElement, Delete, and_, delete, func, select
from sqlalchemy.dialects.sqlite import insert
from sqlalchemy.ext.asyncio import AsyncSession

from memory.chat_marks import MergeWatch, merges_into
from memory.embeddings.vectors import Matrix, from_blob, normalized, to_blob
from memory.models import EmbeddingVector
from memory.recent_chats import CHATS_HELD, drop_least_recent
from memory.storage.sql import json_values

Key = tuple[str, int]


async def save_vectors(
    session: AsyncSession,
    kind: str,
    model: str,
    rows: Sequence[tuple[int, int]],
    vectors: Sequence[Sequence[float]],
) -> int:
    """Store one vector per (ref_id, chat_id) row for `model`, replacing an older one of the same model."""
    if len(rows) != len(vectors):
        raise ValueError(f"{len(rows)} rows but {len(vectors)} vectors")
    if not rows:
        return 0
    matrix = normalized(vectors)
    now = time.time()
    values = [
        {
            "kind": kind,
            "ref_id": ref_id,
            "chat_id": chat_id,
            "model": model,
            "dimension": int(matrix.shape[1]),
            "vector": to_blob(matrix[i]),
            "created_at": now,
        }
        for i, (ref_id, chat_id) in enumerate(rows)
    ]
    stmt = insert(EmbeddingVector).values(values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[EmbeddingVector.kind, EmbeddingVector.ref_id, EmbeddingVector.model],
        set_={"vector": stmt.excluded.vector, "dimension": stmt.excluded.dimension, "created_at": now},
    )
    await session.execute(stmt)
    return len(values)


async def drop_vectors(session: AsyncSession, kind: str, ref_ids: Sequence[int]) -> None:
    """Delete the vectors (of every model) of rows that are being deleted or rewritten, inside the
    caller's transaction, so no vector outlives its row or is taken for a later row given its id."""
    if ref_ids:
        await session.execute(vectors_of(kind, ref_ids))


def vectors_of(kind: str, ref_ids: Sequence[int]) -> Delete:
    """The statement `drop_vectors` runs, for a caller on a plain connection."""
    return delete(EmbeddingVector).where(EmbeddingVector.kind == kind, EmbeddingVector.ref_id.in_(ref_ids))


@dataclass(frozen=True, slots=True)
class ChatVectors:
    """All vectors of one chat under one model and size, in row id order: keys (kind, ref_id), a
    unit-row matrix, the (count, newest id, newest write time) they were read at, and the row ids."""

    keys: list[Key]
    matrix: Matrix
    version: tuple[int, int, float]
    ids: tuple[int, ...] = ()


def _same_space(chat_id: int, model: str, dimension: int) -> ColumnElement[bool]:
    """The vectors of one chat in one vector space: the model's, of `dimension` values. A model that
    changed its size under the same name (another model behind an endpoint, a replaced folder) made
    the other vectors, which are never compared with the new ones and are embedded again."""
    return and_(
        EmbeddingVector.chat_id == chat_id,
        EmbeddingVector.model == model,
        EmbeddingVector.dimension == dimension,
    )


_VECTOR_COLUMNS = (
    EmbeddingVector.id,
    EmbeddingVector.created_at,
    EmbeddingVector.kind,
    EmbeddingVector.ref_id,
    EmbeddingVector.dimension,
    EmbeddingVector.vector,
)


async def load_vectors(session: AsyncSession, chat_id: int, model: str, dimension: int) -> ChatVectors:
    """The vectors of `chat_id` stored for `model` with `dimension` values."""
    rows = (
        await session.execute(
            select(*_VECTOR_COLUMNS)
            .where(_same_space(chat_id, model, dimension))
            .order_by(EmbeddingVector.id)
        )
    ).all()
    if not rows:
        return ChatVectors([], np.zeros((0, dimension), dtype=np.float32), (0, 0, 0.0))
    matrix = np.vstack([from_blob(row.vector, row.dimension) for row in rows])
    version = (len(rows), rows[-1].id, max(row.created_at for row in rows))
    return ChatVectors(
        [(row.kind, row.ref_id) for row in rows], matrix, version, tuple(row.id for row in rows)
    )


async def refresh_vectors(
    session: AsyncSession, held: ChatVectors, chat_id: int, model: str, dimension: int
) -> ChatVectors:
    """`held` brought up to date: the rows gone are left out and only the rows added or rewritten
    since it was read (new ids, a later write time) are read, so the result is what `load_vectors`
    would give now without reading the unchanged vectors again. The list of rows reads the index
    alone. More than half of the rows new: everything is read again."""
    current = {
        int(i): float(at)
        for i, at in await session.execute(
            select(EmbeddingVector.id, EmbeddingVector.created_at).where(
                _same_space(chat_id, model, dimension)
            )
        )
    }
    since, known = held.version[2], set(held.ids)
    fresh = sorted(i for i, at in current.items() if at > since or i not in known)
    if not current or len(fresh) * 2 > len(current) or len(held.ids) != len(held.keys):
        return await load_vectors(session, chat_id, model, dimension)
    stale = set(fresh)
    keep = np.fromiter((i in current and i not in stale for i in held.ids), dtype=bool, count=len(held.ids))
    added = (
        (
            await session.execute(select(*_VECTOR_COLUMNS).where(EmbeddingVector.id.in_(json_values(fresh))))
        ).all()
        if fresh
        else []
    )
    kept = np.flatnonzero(keep)
    ids = [held.ids[n] for n in kept] + [int(row.id) for row in added]
    keys = [held.keys[n] for n in kept] + [(row.kind, row.ref_id) for row in added]
    # One copy of the matrix when rows were only added after the others (the usual case).
    base = held.matrix if keep.all() else held.matrix[kept]
    matrix = np.concatenate([base, *(from_blob(row.vector, row.dimension)[None, :] for row in added)])
    version = (len(current), max(current), max(current.values()))
    if any(a >= b for a, b in pairwise(ids)):
        order = np.argsort(np.array(ids, dtype=np.int64), kind="stable")
        matrix, keys, ids = matrix[order], [keys[n] for n in order], [ids[n] for n in order]
    return ChatVectors(keys, matrix, version, tuple(ids))


class VectorIndex:
    """Per-chat vectors cached in memory; a chat's rows added, rewritten or removed since are read
    again when its row count, newest id or newest write time changes (`refresh_vectors`), and the
    whole chat when another chat was merged into it (memory.chat_merge, by this process or another:
    rows of lower ids move in while rows whose turn window changed are dropped, which count and newest
    id may not show). The vectors held for a chat merged into another are dropped at the next search
    after the merge, in whichever chats (memory.chat_marks.MergeWatch), or at once by `forget_chats`."""

    def __init__(self, max_chats: int = CHATS_HELD) -> None:
        """Hold the vectors of the `max_chats` chats searched last, besides those of the search under
        way (a search over more chats would otherwise read them all again each time)."""
        self.max_chats = max_chats
        self._cache: OrderedDict[tuple[int, str, int], tuple[int, ChatVectors]] = OrderedDict()  # LRU first
        self._merges = MergeWatch()

    def cached_chats(self) -> set[int]:
        """The chats whose vectors are held in memory."""
        return {chat_id for chat_id, _, _ in self._cache}

    def forget_chats(self, chat_ids: Iterable[int]) -> None:
        """Drop the vectors held for these chats (a merge this process made); reloaded when searched."""
        dropped = set(chat_ids)
        if dropped:
            for key in [k for k in self._cache if k[0] in dropped]:
                del self._cache[key]

    async def _chat(self, session: AsyncSession, chat_id: int, model: str, dimension: int) -> ChatVectors:
        found = (
            await session.execute(
                select(
                    func.count(),
                    func.max(EmbeddingVector.id),
                    func.max(EmbeddingVector.created_at),
                    merges_into(chat_id),
                ).where(_same_space(chat_id, model, dimension))
            )
        ).one()
        version = (int(found[0]), int(found[1] or 0), float(found[2] or 0.0))
        merged = int(found[3])
        key = (chat_id, model, dimension)
        held = self._cache.get(key)
        if held is None or held[0] != merged:
            held = (merged, await load_vectors(session, chat_id, model, dimension))
            self._cache[key] = held
        elif held[1].version != version:
            held = (merged, await refresh_vectors(session, held[1], chat_id, model, dimension))
            self._cache[key] = held
        self._cache.move_to_end(key)
        return held[1]

    async def search(
        self, session: AsyncSession, chat_ids: Sequence[int], model: str, query: Sequence[float], limit: int
    ) -> list[tuple[Key, float]]:
        """The `limit` most similar stored rows of the chats (cosine), best first; only vectors of
        the query's size are compared with it, and a query vector of zeros finds nothing."""
        q = normalized([query])[0]
        if not q.any():  # no values, or all zero: a query with no direction is similar to nothing
            return []
        self.forget_chats(await self._merges.gone(session, self.cached_chats()))
        scored: list[tuple[Key, float]] = []
        for chat_id in chat_ids:
            chat = await self._chat(session, chat_id, model, int(q.shape[0]))
            if not chat.keys:
                continue
            sims = chat.matrix @ q
            top = np.argsort(-sims)[:limit]
            scored.extend((chat.keys[i], float(sims[i])) for i in top)
        drop_least_recent(self._cache, self.max_chats, keep=lambda key: key[0] in chat_ids)
        scored.sort(key=lambda item: -item[1])
        return scored[:limit]
