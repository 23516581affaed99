"""What the `embeddings` table holds per model name: how many vectors, of which sizes, how many bytes,
in how many chats. Read from the (chat_id, model, dimension, created_at) index alone, never the vectors
themselves, so it stays quick on a table of gigabytes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.embeddings.vectors import VALUE_BYTES
from memory.models import EmbeddingVector


@dataclass(frozen=True, slots=True)
class StoredSize:
    """How many vectors of one model have one size, and the latest write time among them."""

    dimension: int
    vectors: int
    newest_time: float


@dataclass(frozen=True, slots=True)
class StoredModel:
    """The vectors stored under one model name. `dimensions` lists their sizes (values per vector;
    more than one when the model changed size under its name), `sizes` how many there are of each,
    `bytes` what the vectors themselves take (the rows and their index entries take a little more).
    `newest_id` and `newest_time` are the highest row id and write time among them."""

    model: str
    vectors: int
    dimensions: tuple[int, ...]
    bytes: int
    chat_ids: tuple[int, ...]
    newest_id: int
    newest_time: float
    sizes: tuple[StoredSize, ...]

    @property
    def chats(self) -> int:
        return len(self.chat_ids)

    @property
    def usual_dimension(self) -> int:
        """The size most of the vectors have (of two as common, the one written last): the model's
        size as far as the stored vectors tell, without loading or asking the model."""
        return max(self.sizes, key=lambda size: (size.vectors, size.newest_time)).dimension

    def vectors_not_of(self, dimension: int) -> int:
        """How many of the vectors are of another size than `dimension`."""
        return sum(size.vectors for size in self.sizes if size.dimension != dimension)


class _Group(NamedTuple):
    """The vectors of one model in one chat with one size."""

    chat_id: int
    dimension: int
    vectors: int
    newest_id: int
    newest_time: float


def _chat_space_groups(model: str | None) -> Select[int, str, int, int, int, float]:
    """One row per (chat, model, size): its count, newest id and write time (`model`: that one only).
    Grouped in the index's own order, so SQLite walks the covering index and sorts nothing."""
    query = select(
        EmbeddingVector.chat_id,
        EmbeddingVector.model,
        EmbeddingVector.dimension,
        func.count(),
        func.max(EmbeddingVector.id),
        func.max(EmbeddingVector.created_at),
    ).group_by(EmbeddingVector.chat_id, EmbeddingVector.model, EmbeddingVector.dimension)
    return query if model is None else query.where(EmbeddingVector.model == model)


def _summed(model: str, groups: list[_Group]) -> StoredModel:
    dimensions = tuple(sorted({g.dimension for g in groups}))
    return StoredModel(
        model=model,
        vectors=sum(g.vectors for g in groups),
        dimensions=dimensions,
        bytes=sum(g.vectors * g.dimension * VALUE_BYTES for g in groups),
        chat_ids=tuple(sorted({g.chat_id for g in groups})),
        newest_id=max(g.newest_id for g in groups),
        newest_time=max(g.newest_time for g in groups),
        sizes=tuple(
            StoredSize(
                d,
                sum(g.vectors for g in groups if g.dimension == d),
                max(g.newest_time for g in groups if g.dimension == d),
            )
            for d in dimensions
        ),
    )


async def stored_models(session: AsyncSession, model: str | None = None) -> list[StoredModel]:
    """Every model name with vectors stored, by name (`model`: only that one, or nothing)."""
    by_model: dict[str, list[_Group]] = {}
    for chat_id, name, dimension, count, newest_id, newest_time in await session.execute(
        _chat_space_groups(model)
    ):
        group = _Group(int(chat_id), int(dimension), int(count), int(newest_id), float(newest_time))
        by_model.setdefault(name, []).append(group)
    return [_summed(name, groups) for name, groups in sorted(by_model.items())]
