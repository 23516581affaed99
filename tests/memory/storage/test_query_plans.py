"""Reading a chat at scale: the recent window and a job's next batch seek what they need instead of
reading every message of the chat."""

from __future__ import annotations

from datetime import timedelta

from memory.messages import after
from memory.service import MemoryService
from tests.conftest import T0, make_message
from tests.query_plans import planned

TEXTS = ["周末去爬山", "周末加班", "deploy 失败了", "火锅还是烧烤", "周末去爬山"]


async def two_chats(memory: MemoryService) -> tuple[int, int]:
    """Two chats whose messages repeat the same few texts (many equal BM25 scores) and interleave."""
    batch = [
        make_message(n, chat=chat, text=TEXTS[n % len(TEXTS)], time=T0 + timedelta(minutes=n))
        for n in range(60)
        for chat in ("g1", "g2")
    ]
    await memory.record_many(batch)
    g1, g2 = await memory.chat("test", "g1"), await memory.chat("test", "g2")
    assert g1 is not None and g2 is not None
    return g1.id, g2.id


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
