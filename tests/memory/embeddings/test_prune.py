"""What the embeddings table holds per model, the backfill's progress, and pruning one model's vectors in
batches: against a real database, with vectors written through the store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import update

from memory.embeddings.backfill import backfill, backfill_all, backfill_progress
from memory.embeddings.prune import Pruned, left_of, prune_batches
from memory.embeddings.stored_models import stored_models
from memory.models import EmbeddingVector
from memory.service import MemoryService
from memory.storage import Database, DatabaseLocked
from tests.conftest import chat_ids, database_locked, make_message
from tests.memory.embeddings.test_embeddings import TopicEmbedder, WiderTopicEmbedder
from tests.memory.recall.conftest import add_history
from tests.query_plans import planned

SETTLED = 1e10  # a `now` after every test message: all have settled


def named(model: str) -> TopicEmbedder:
    embedder = TopicEmbedder()
    embedder.model = model
    return embedder


async def two_chats(memory: MemoryService, per_chat: int = 5) -> list[int]:
    await memory.record_many(
        make_message(n, chat=chat, text=f"爬山 hike {n}")
        for chat in ("a", "b")
        for n in range(1 if chat == "a" else 100, (1 if chat == "a" else 100) + per_chat)
    )
    return await chat_ids(memory, "a", "b")


async def test_stored_models_counts_vectors_sizes_bytes_and_chats_from_the_index_alone(
    memory: MemoryService,
) -> None:
    db = memory.db
    await two_chats(memory)
    await backfill_all(db, named("旧模型"), now=SETTLED)
    await memory.record(make_message(200, chat="c", text="只在一个群"))
    assert (await backfill_all(db, named("old'one"), now=SETTLED)).messages == 11
    with planned(db) as plans:
        async with db.read() as session:
            found = await stored_models(session)
    assert [(f.model, f.vectors, f.dimensions, f.bytes, f.chats) for f in found] == [
        ("old'one", 11, (3,), 11 * 3 * 4, 3),
        ("旧模型", 10, (3,), 10 * 3 * 4, 2),
    ]
    reads = [step.detail for _, steps in plans for step in steps if "embeddings" in step.detail]
    assert reads and all("COVERING INDEX" in detail for detail in reads), reads


async def test_backfill_progress_counts_what_waits_for_the_model(memory: MemoryService) -> None:
    db = memory.db
    [a, _] = await two_chats(memory)
    await backfill_all(db, named("m"), now=SETTLED)
    await memory.record_many(
        [make_message(300, chat="c", text="新消息"), make_message(301, text="/recall x")]
    )
    async with db.write() as session:
        await add_history(session, a, "爬山", "周六爬山", make_message(1).time, make_message(2).time, [1, 2])
    async with db.read() as session:
        progress = await backfill_progress(session, "m")
        other = await backfill_progress(session, "another")
    assert (progress.messages.embedded, progress.messages.total) == (10, 11), (
        "a memory command is not embedded"
    )
    assert (progress.topics.embedded, progress.topics.total) == (0, 1)
    assert (progress.rows.embedded, progress.rows.total, progress.rows.waiting) == (10, 12, 2)
    assert (other.rows.embedded, other.rows.waiting) == (0, 12)
    await backfill_all(db, named("m"), now=SETTLED)
    async with db.read() as session:
        assert (await backfill_progress(session, "m")).rows.waiting == 0


async def test_a_prune_goes_in_batches_and_leaves_other_models_alone(memory: MemoryService) -> None:
    db = memory.db
    await two_chats(memory)
    await backfill_all(db, named("old"), now=SETTLED)
    await backfill_all(db, named("new"), now=SETTLED)
    async with db.read() as session:
        [old] = await stored_models(session, "old")
    steps = [(step.vectors, step.bytes) async for step in prune_batches(db, old, batch=2)]
    assert steps == [(2, 24), (2, 24), (1, 12), (2, 24), (2, 24), (1, 12)], "each chat in batches of 2"
    assert await left_of(db, "old") == 0
    assert await left_of(db, "new") == 10


async def test_vectors_written_after_the_plan_are_kept(memory: MemoryService) -> None:
    """A bot still embedding with the model while it is pruned: what it writes then stays."""
    db = memory.db
    await two_chats(memory)
    await backfill_all(db, named("old"), now=SETTLED)
    async with db.read() as session:
        [old] = await stored_models(session, "old")
    [_, b] = await chat_ids(memory, "a", "b")
    async with db.write() as session:
        await add_history(session, b, "hike", "a hike", make_message(1).time, make_message(2).time, [100])
    assert (await backfill_all(db, named("old"), now=SETTLED)).histories == 1  # a new row in chat b
    async with db.write() as session:  # and one rewritten (same row id, a later write time)
        await session.execute(
            update(EmbeddingVector)
            .where(EmbeddingVector.ref_id == 1)
            .values(created_at=EmbeddingVector.created_at + 1)
        )
    deleted = [step.vectors async for step in prune_batches(db, old)]
    assert sum(deleted) == 9
    assert await left_of(db, "old") == 2


async def test_a_lock_held_past_the_busy_timeout_stops_a_prune_keeping_the_batches_done(
    tmp_path: Path,
) -> None:
    db = await Database.open(tmp_path / "d", busy_timeout_ms=100)
    try:
        memory = MemoryService(db)
        await two_chats(memory)
        await backfill_all(db, named("old"), now=SETTLED)
        async with db.read() as session:
            [old] = await stored_models(session, "old")
        batches = prune_batches(db, old, batch=3)
        first = await anext(batches)
        with database_locked(db.path), pytest.raises(DatabaseLocked, match=re.escape(str(db.path))):
            await anext(batches)
        assert first == Pruned(3, 36)
        assert await left_of(db, "old") == 7, "the batch done stays done, the failed one changed nothing"
        assert sum([step.vectors async for step in prune_batches(db, old, batch=3)]) == 7
        assert await left_of(db, "old") == 0
    finally:
        await db.close()


async def test_the_usual_size_of_a_model_is_its_most_common_then_its_newest(memory: MemoryService) -> None:
    """What `qunyi embeddings status` takes as the size of the model in force, without loading it."""
    db = memory.db
    await two_chats(memory)  # 10 messages
    await backfill_all(db, named("m"), now=SETTLED)
    wider = WiderTopicEmbedder()
    wider.model = "m"
    sizes = []
    for batch in (4, 1, 1):  # 4 of 10 at the new size, then 5 (a tie), then 6
        await backfill(db, wider, batch_size=batch, now=SETTLED)
        async with db.read() as session:
            [found] = await stored_models(session, "m")
        sizes.append((found.usual_dimension, found.vectors_not_of(found.usual_dimension)))
    assert sizes == [(3, 4), (4, 5), (4, 4)], "of two as common, the size written last"
