"""The full-text re-index after a tokenizer change: a database stamped with an older tokenizer is indexed
again batch by batch (memory.reindex), resuming after a stop, with every row indexed exactly once; a
new database is stamped current and has nothing to do.

The old database is made for real: rows recorded by this version, then their full-text entries written
again as version 1 wrote them (jieba's search-mode words only, `old_index_text`) and the stamp put back
to version 1, as a database from before the stamp has it."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sqlite3
import sys
from datetime import timedelta
from pathlib import Path

import jieba
from sqlalchemy import delete, text

from memory.clock import ManualClock
from memory.history.pack import HISTORY_FTS
from memory.history.pack import reindex as reindex_history
from memory.models import ChatHistory, JobState
from memory.recall.candidates import Scope, lexical_messages
from memory.recall.lexical import search_messages
from memory.recall.preferences import PREFERENCE_FTS
from memory.recall.setup import attach_recall
from memory.reindex import (
    MESSAGES_FTS,
    TABLES,
    TEXTS,
    read_batch,
    read_stamp,
    reindex,
    reindex_batch,
    rows_left,
    write_batch,
)
from memory.service import MemoryService
from memory.storage import Database
from memory.storage.fts import INDEX_JOB, bm25_search, match_expression
from memory.storage.tables import FTS_TABLES
from memory.text import INDEX_VERSION, index_text, normalize
from memory.turn_windows import WINDOWS_FTS, rebuild_windows
from tests.conftest import T0, chat_ids, make_message
from tests.memory.recall.conftest import add_history
from tests.waiting import eventually

# A chat's slang jieba's dictionary lacks, glued to its neighbours one way or another (README's example).
GLUED = ["上次冲塔输惨了", "我帮大家订冲塔的夜宵", "老赵值班记得别冲塔", "晚上要冲塔"]
OTHER = ["明天开会讨论预算", "黄焖鸡吃腻了", "我最喜欢冲塔的那种刺激感", "冲塔开始了"]


def old_index_text(body: str) -> str:
    """What version 1 indexed a text as: jieba's search-mode words, nothing else."""
    return " ".join(tok for tok in jieba.cut_for_search(normalize(body)) if re.search(r"\w", tok))


async def make_old(db: Database) -> None:
    """Index every full-text row again as version 1 did, and drop the stamp (a database from before it)."""
    async with db.write() as session:
        for table, texts in TEXTS.items():
            rowids = [int(r[0]) for r in await session.execute(text(f"SELECT rowid FROM {table}"))]
            for rowid, body in (await texts(session, rowids)).items():
                await session.execute(text(f"DELETE FROM {table} WHERE rowid = :r"), {"r": rowid})
                await session.execute(
                    text(f"INSERT INTO {table}(rowid, body) VALUES (:r, :b)"),
                    {"r": rowid, "b": old_index_text(body)},
                )
        message_ids = [int(r[0]) for r in await session.execute(text("SELECT id FROM messages"))]
        await rebuild_windows(session, message_ids)
        await session.execute(delete(JobState).where(JobState.job == INDEX_JOB))


async def record_chat(db: Database, count: int = 0) -> tuple[MemoryService, int]:
    """GLUED and OTHER (a preference among them), `count` more messages, and a topic holding 冲塔."""
    memory = MemoryService(db, ManualClock(T0 + timedelta(days=1)))
    attach_recall(memory)
    texts = [*GLUED, *OTHER, *(f"第{n}条消息：今天要冲塔吗" for n in range(count))]
    await memory.record_many([make_message(i, text=t) for i, t in enumerate(texts, start=1)])
    [chat] = await chat_ids(memory, "g1")
    async with db.write() as session:
        await add_history(
            session, chat, "周末安排", "大家约好晚上要冲塔", T0, T0 + timedelta(hours=1), [1, 2]
        )
    return memory, chat


async def found_glued(db: Database, chat: int) -> set[str]:
    return {m.text for m, _ in await search_messages(db, [chat], "冲塔", 20)} & set(GLUED)


async def table_hits(db: Database, table: str, query: str) -> int:
    match = match_expression(query)
    assert match is not None
    async with db.read() as session:
        return len(await bm25_search(session, table, match, 20))


async def counts(db: Database) -> dict[str, int]:
    async with db.read() as session:
        return {
            table: int((await session.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one())
            for table in TABLES
        }


async def assert_every_row_current(db: Database, expected: dict[str, int]) -> None:
    """Every table holds the rows it held (none missing, none doubled), each of this version's tokens."""
    assert await counts(db) == expected
    async with db.read() as session:
        for table, texts in TEXTS.items():
            bodies = {
                int(r[0]): str(r[1]) for r in await session.execute(text(f"SELECT rowid, body FROM {table}"))
            }
            sources = await texts(session, sorted(bodies))
            assert bodies == {rowid: index_text(body) for rowid, body in sources.items()}, table
        distinct = await session.execute(text(f"SELECT count(DISTINCT rowid) FROM {WINDOWS_FTS}"))
        assert int(distinct.scalar_one()) == expected[WINDOWS_FTS]
        windows = {
            int(r[0]): str(r[1])
            for r in await session.execute(text(f"SELECT rowid, body FROM {WINDOWS_FTS}"))
        }
    await rebuild_all_windows(db)
    async with db.read() as session:
        rebuilt = {
            int(r[0]): str(r[1])
            for r in await session.execute(text(f"SELECT rowid, body FROM {WINDOWS_FTS}"))
        }
    assert windows == rebuilt, "the windows are of the messages' current tokens"


async def rebuild_all_windows(db: Database) -> None:
    async with db.write() as session:
        ids = [int(r[0]) for r in await session.execute(text(f"SELECT rowid FROM {MESSAGES_FTS}"))]
        await rebuild_windows(session, ids)


async def test_rows_of_an_older_tokenizer_find_a_new_word_once_reindexed(db: Database) -> None:
    _, chat = await record_chat(db)
    before = await counts(db)
    assert before[PREFERENCE_FTS] >= 1, "a preference document is among the rows"
    await make_old(db)
    assert await found_glued(db, chat) == set(), "version 1's tokens hide 冲塔 where jieba glued it"
    assert await table_hits(db, HISTORY_FTS, "冲塔") == 0
    async with db.read() as session:
        assert (await read_stamp(session)).version == 1
        assert await rows_left(session) == sum(before.values())

    assert await reindex(db) == sum(before.values())

    assert await found_glued(db, chat) == set(GLUED)
    assert await table_hits(db, HISTORY_FTS, "冲塔") == 1
    assert await table_hits(db, PREFERENCE_FTS, "冲塔") >= 1
    async with db.read() as session:
        stamp = await read_stamp(session)
        assert stamp.version == INDEX_VERSION and not stamp.pending
        assert await rows_left(session) == 0
        row = await session.get(JobState, (INDEX_JOB, 0))
        assert row is not None and row.data == {"version": INDEX_VERSION}
    await assert_every_row_current(db, before)
    assert await reindex_batch(db) is None, "done: nothing more to do"


async def test_rows_of_two_chats_talking_at_once_stay_in_their_chat_once_reindexed(db: Database) -> None:
    """Every message, and its turn window, is found in its own chat only after the re-index: the windows
    are rebuilt from the neighbours in the message's chat, never from the other chat's message a minute
    away (黄焖鸡 is said in g2 only, between two of g1's messages)."""
    memory = MemoryService(db, ManualClock(T0 + timedelta(days=1)))
    attach_recall(memory)
    said = [make_message(i, chat=f"g{2 - i % 2}", text=t) for i, t in enumerate([*GLUED, *OTHER], start=1)]
    await memory.record_many(said)
    chats = dict(zip(("g1", "g2"), await chat_ids(memory, "g1", "g2"), strict=True))
    await make_old(db)
    await reindex(db)
    for key, chat in chats.items():
        own = {m.text for m in said if m.chat_id == key}
        found = {m.text for m, _ in await search_messages(db, [chat], "冲塔", 20)}
        assert found and found <= own, key
    match = match_expression("黄焖鸡")
    assert match is not None
    async with db.read() as session:
        windows = {
            key: await lexical_messages(session, Scope((chat,)), match, 20, WINDOWS_FTS)
            for key, chat in chats.items()
        }
    assert windows["g2"] and windows["g1"] == []


async def test_a_reindex_stopped_after_a_batch_finishes_after_a_restart_each_row_once(tmp_path: Path) -> None:
    db = await Database.open(tmp_path)
    _, chat = await record_chat(db, count=40)
    before = await counts(db)
    await make_old(db)
    assert await reindex_batch(db, batch_rows=7) == 7
    async with db.read() as session:
        stamp = await read_stamp(session)
        assert (stamp.table, stamp.pending) == (MESSAGES_FTS, True)
        assert await rows_left(session) == sum(before.values()) - 7
    # Recall works meanwhile: the rows done by their new tokens, the others by their old ones.
    assert await found_glued(db, chat) == set(GLUED)
    assert len({m.text for m, _ in await search_messages(db, [chat], "消息", 50)}) == 40
    await db.close()

    restarted = await Database.open(tmp_path)
    try:
        async with restarted.read() as session:
            assert (await read_stamp(session)).cursor == stamp.cursor, "the cursor survived the restart"
        assert await reindex(restarted, batch_rows=7) == sum(before.values()) - 7
        await assert_every_row_current(restarted, before)
    finally:
        await restarted.close()


async def test_a_new_database_is_stamped_current_and_has_nothing_to_reindex(db: Database) -> None:
    async with db.read() as session:
        row = await session.get(JobState, (INDEX_JOB, 0))
        assert row is not None and row.data == {"version": INDEX_VERSION}
    await record_chat(db)
    async with db.read() as session:
        assert await rows_left(session) == 0
    assert await reindex_batch(db) is None


ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import asyncio, sys
from pathlib import Path
from memory.reindex import reindex
from memory.storage import Database

async def main() -> None:
    db = await Database.open(Path(sys.argv[1]))
    await reindex(db, batch_rows=1)

asyncio.run(main())
"""


def _cursor(path: Path) -> int:
    with sqlite3.connect(path) as con:
        found = con.execute("SELECT cursor FROM job_state WHERE job = ?", (INDEX_JOB,)).fetchone()
    return int(found[0]) if found else 0


async def test_a_reindex_killed_midway_finishes_after_a_restart_each_row_once(tmp_path: Path) -> None:
    """SIGKILL at whatever point the re-index is (between batches or inside one), then a restart: the
    rows come out as a re-index never stopped leaves them."""
    db = await Database.open(tmp_path)
    await record_chat(db, count=300)
    before = await counts(db)
    await make_old(db)
    await db.close()
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHILD, str(tmp_path), cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    try:
        await eventually(lambda: _cursor(tmp_path / "qunyi.db") >= 20, "the child's re-index under way")
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()
    restarted = await Database.open(tmp_path)
    try:
        async with restarted.read() as session:
            stamp = await read_stamp(session)
            assert stamp.pending, "killed before the re-index was done"
        await reindex(restarted)
        await assert_every_row_current(restarted, before)
    finally:
        await restarted.close()


async def test_every_full_text_table_of_the_schema_is_reindexed(db: Database) -> None:
    """A full-text table added later without a place in the re-index would keep its old tokens."""
    async with db.read() as session:
        found = await session.execute(text("SELECT name FROM sqlite_master WHERE sql LIKE '%USING fts5%'"))
        assert set(found.scalars()) == set(TABLES) == set(FTS_TABLES)


async def reindex_until(db: Database, table: str) -> None:
    """Re-index until `table` is the one under way."""
    while True:
        async with db.read() as session:
            if (await read_stamp(session)).table == table:
                return
        assert await reindex_batch(db) is not None, f"{table} never came"


async def test_a_topic_rebuilt_between_a_batchs_read_and_its_write_is_indexed_as_it_is_then(
    db: Database,
) -> None:
    """The batch's tokens are of the text read; a topic rebuilt meanwhile (a message of it deleted) was
    indexed by its new text, which the batch's stale tokens must not replace."""
    await record_chat(db)
    await make_old(db)
    await reindex_until(db, HISTORY_FTS)
    batch = await read_batch(db)
    assert batch is not None and batch.stamp.table == HISTORY_FTS
    [topic] = batch.rowids
    async with db.write() as session:
        row = await session.get(ChatHistory, topic)
        assert row is not None
        row.summary = "大家改成明天去九溪爬山"
        await reindex_history(session, [topic], [row])
    assert await write_batch(db, batch) == 1
    assert await table_hits(db, HISTORY_FTS, "爬山") == 1
    assert await table_hits(db, HISTORY_FTS, "冲塔") == 0, "the tokens of the text read were not written"


async def test_a_batch_another_process_wrote_meanwhile_is_not_written_again(db: Database) -> None:
    await record_chat(db, count=10)
    before = await counts(db)
    await make_old(db)
    mine, theirs = await read_batch(db, batch_rows=5), await read_batch(db, batch_rows=5)
    assert mine is not None and theirs is not None
    assert await write_batch(db, theirs) == 5
    assert await write_batch(db, mine) == 0, "the stamp moved on since it was read"
    async with db.read() as session:
        assert (await read_stamp(session)).cursor == theirs.rowids[-1]
    await reindex(db)
    await assert_every_row_current(db, before)
