"""A data directory worth compacting: messages recorded through the memory service (with their full-text
index), vectors backfilled for them, and bulk vectors of a model in force and of an old one to delete."""

from __future__ import annotations

import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path

from memory.embeddings.backfill import backfill
from memory.service import MemoryService
from memory.storage import Database
from tests.conftest import make_message
from tests.memory.embeddings.test_embeddings import TopicEmbedder

OLD = "old-model 旧"
KEPT = "kept-model"
VECTOR_BYTES = 1536  # 384 float32 values, as all-MiniLM-L6-v2 stores
TEXTS = (
    "周六去西湖边爬山吗？",
    "好啊 hike the trail",
    "晚上吃火锅 hotpot",
    "这个 bug 的代码我改好了",
    "明天组会",
)


async def fill(data_dir: Path, old_vectors: int, kept_vectors: int = 0) -> None:
    """Record 120 messages in two chats (vectors for all of them under KEPT), then add `kept_vectors`
    vectors of KEPT and `old_vectors` of OLD, 1536 bytes each."""
    db = await Database.open(data_dir)
    try:
        memory = MemoryService(db)
        for n in range(120):
            text = f"{TEXTS[n % len(TEXTS)]} #{n}"
            await memory.record(make_message(n, chat=f"g{n % 2}", sender=f"u{n % 7}", text=text))
        embedder = TopicEmbedder()
        embedder.model = KEPT
        await backfill(db, embedder, batch_size=200, now=1e10)
    finally:
        await db.close()
    with closing(sqlite3.connect(data_dir / "qunyi.db")) as connection, connection:
        chat_ids = [row[0] for row in connection.execute("SELECT id FROM chats ORDER BY id")]
        for model, count in ((KEPT, kept_vectors), (OLD, old_vectors)):
            connection.executemany(
                "INSERT INTO embeddings (kind, ref_id, chat_id, model, dimension, vector, created_at) "
                "VALUES ('message', ?, ?, ?, ?, randomblob(?), 0)",
                [
                    (1_000_000 + i, chat_ids[i % 2], model, VECTOR_BYTES // 4, VECTOR_BYTES)
                    for i in range(count)
                ],
            )


def rows(database: Path) -> dict[str, Counter[tuple[object, ...]]]:
    """Every row of every table (the full-text indexes' own tables included), as a multiset a table."""
    with closing(sqlite3.connect(database)) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {table: Counter(connection.execute(f'SELECT * FROM "{table}"')) for table in tables}


def pages(database: Path) -> tuple[int, int]:
    """The database's page count and free page count."""
    with closing(sqlite3.connect(database)) as connection:
        return (
            int(connection.execute("PRAGMA page_count").fetchone()[0]),
            int(connection.execute("PRAGMA freelist_count").fetchone()[0]),
        )
