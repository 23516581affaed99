"""Reading a chat at scale: the recent window, a job's next batch and recall seek what they need
instead of reading every message of the chat, and the rewritten recall statements give the answers
the old ones gave, ties included."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text

from memory.messages import after
from memory.recall.candidates import Scope, messages_in_window
from memory.recall.keywords import query_keywords
from memory.recall.rarity import inverse_document_frequency, keyword_rarity
from memory.recall.timeexpr import TimeHint
from memory.service import MemoryService
from memory.storage import fts
from memory.storage.fts import bm25_search, match_expression, searchable
from tests.conftest import T0, chat_ids, make_message
from tests.query_plans import listed_subqueries, planned

TEXTS = ["周末去爬山", "周末加班", "deploy 失败了", "火锅还是烧烤", "周末去爬山"]


async def two_chats(memory: MemoryService) -> tuple[int, int]:
    """Two chats whose messages repeat the same few texts (many equal BM25 scores) and interleave."""
    batch = [
        make_message(n, chat=chat, text=TEXTS[n % len(TEXTS)], time=T0 + timedelta(minutes=n))
        for n in range(60)
        for chat in ("g1", "g2")
    ]
    await memory.record_many(batch)
    g1, g2 = await chat_ids(memory, "g1", "g2")
    return g1, g2


async def test_the_recent_window_and_a_jobs_next_batch_are_a_seek_not_a_sort_of_the_chat(
    memory: MemoryService,
) -> None:
    g1, _ = await two_chats(memory)
    with planned(memory.db) as plans:
        window = await memory.recent(g1, 5)
        before = await memory.recent(g1, 5, before_id=window[0].id)
        async with memory.db.read() as session:
            batch = await after(session, g1, before[0].id, 3)
    assert [m.id for m in batch] == [m.id for m in before[1:4]]
    assert len(plans) == 3
    for statement, steps in plans:
        assert len(steps) == 1 and "ix_messages_chat_id" in steps[0].detail, (statement, steps)


async def test_recall_looks_matches_up_instead_of_listing_a_large_chats_messages(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chat of at least `LIST_SCOPE_BELOW` messages (here 10) is never listed whole per search."""
    monkeypatch.setattr(fts, "LIST_SCOPE_BELOW", 10)
    g1, _ = await two_chats(memory)
    with planned(memory.db) as plans:
        hits = await memory.search([g1], '周末 "去爬山" deploy', 10)
    assert hits and all(h.chat_id == g1 for h in hits)
    read = [(s, d) for s, steps in plans for d in listed_subqueries(steps) if " messages" in d or "_fts" in d]
    assert read == []


@pytest.mark.parametrize("list_below", [10, fts.LIST_SCOPE_BELOW])
async def test_scoped_bm25_and_keyword_counts_answer_as_the_listed_scope_did_on_ties(
    memory: MemoryService, monkeypatch: pytest.MonkeyPatch, list_below: int
) -> None:
    """The old statements, scope as a list of the chat's message ids, against the new ones, for a
    scope taken as large (matches looked up) and as small (listed)."""
    monkeypatch.setattr(fts, "LIST_SCOPE_BELOW", list_below)
    g1, g2 = await two_chats(memory)
    match = match_expression("周末 爬山 火锅")
    assert match is not None
    keywords = query_keywords("周末 爬山 火锅 失败")
    async with memory.db.read() as session:
        for chats in ((g1,), (g2,), (g1, g2)):
            scope = f"chat_id IN ({', '.join(str(c) for c in chats)})"
            for table in ("messages_fts", "message_windows_fts"):
                listed = await session.execute(
                    text(
                        f"SELECT rowid, -bm25({table}) AS score FROM {table} WHERE {table} MATCH :m "
                        f"AND +rowid IN (SELECT id FROM messages WHERE {scope}) ORDER BY score DESC LIMIT 7"
                    ),
                    {"m": match},
                )
                old = [(int(r[0]), float(r[1])) for r in listed]
                assert len({score for _, score in old}) < len(old), "the test needs ties"
                assert await bm25_search(session, table, match, 7, "messages", scope) == old
            documents = len(chats) * 60
            counted = {}
            for k in keywords:
                row = await session.execute(
                    text(
                        "SELECT count(*) FROM messages WHERE id IN (SELECT rowid FROM messages_fts "
                        f"WHERE messages_fts MATCH :t) AND {scope}"
                    ),
                    {"t": k.fts()},
                )
                counted[k.match] = int(row.scalar_one())
            rarity = await keyword_rarity(session, chats, keywords)
            assert rarity == {m: inverse_document_frequency(n, documents) for m, n in counted.items()}


async def test_a_time_window_with_enough_messages_reads_its_newest_and_answers_as_the_full_ranking(
    memory: MemoryService,
) -> None:
    """Messages inside the window (its end included) come first, newest first, then those of the
    tolerance nearest first; the full ranking sorted every message of the window and its margins."""
    g1, _ = await two_chats(memory)  # one message a minute from T0, the same minute in both chats
    await memory.record_many(
        [make_message(500 + n, text="同一刻", time=T0 + timedelta(minutes=30)) for n in range(4)]
    )
    async with memory.db.read() as session:
        for start, end, tolerance, limit in [
            (20, 30, 5, 6),
            (20, 30, 5, 40),
            (58, 70, 10, 9),
            (0, 0, 3, 5),
            (10, 20, 0, 3),
        ]:
            hint = TimeHint(
                T0 + timedelta(minutes=start),
                T0 + timedelta(minutes=end),
                timedelta(minutes=tolerance),
                (0, 0),
                "",
            )
            scope = Scope((g1,))
            params: dict[str, object] = {}
            where = scope.messages(params)
            params.update(
                c0=hint.start.timestamp(),
                c1=hint.end.timestamp(),
                lim=limit,
                w0=(hint.start - hint.tolerance).timestamp(),
                w1=(hint.end + hint.tolerance).timestamp(),
            )
            ranked = await session.execute(
                text(
                    f"SELECT id FROM messages WHERE {where} AND time >= :w0 AND time < :w1 "
                    f"AND {searchable('messages')} "
                    "ORDER BY max(:c0 - time, time - :c1, 0) ASC, time DESC, id DESC LIMIT :lim"
                ),
                params,
            )
            old = [(("message", int(r[0])), 1.0) for r in ranked]
            with planned(memory.db) as plans:
                assert await messages_in_window(session, scope, hint, limit) == old, (start, end, limit)
            if (start, limit) == (20, 6):
                assert len(plans) == 1 and not any("TEMP B-TREE" in s.detail for s in plans[0][1])
