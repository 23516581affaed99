"""The turn-window index: each message with the close turns around it, kept in step on ingest."""

from __future__ import annotations

from datetime import timedelta

from memory.messages import neighbours
from memory.recall import RecallQuery, RecallSettings
from memory.recall.settings import RecallWeights
from memory.recall.setup import attach_recall
from memory.service import MemoryService
from memory.storage import Database
from memory.storage.fts import indexed_tokens
from memory.turn_windows import WINDOWS_FTS
from tests.conftest import T0, make_message


async def windows(db: Database, ids: list[int]) -> dict[int, str]:
    async with db.read() as session:
        return {i: " ".join(t) for i, t in (await indexed_tokens(session, WINDOWS_FTS, ids)).items()}


async def test_windows_hold_the_close_turns_and_follow_late_arrivals(memory: MemoryService) -> None:
    first = await memory.record(make_message(1, text="how was the weekend"))
    third = await memory.record(make_message(3, text="pottery class"))
    later = await memory.record(make_message(4, text="much later", time=T0 + timedelta(days=1)))
    command = await memory.record(make_message(5, text="/recall pottery", time=T0 + timedelta(days=1)))
    assert await windows(memory.db, [first.message_id, third.message_id, later.message_id]) == {
        first.message_id: "how was the weekend pottery class",
        third.message_id: "how was the weekend pottery class",
        later.message_id: "much later",
    }
    assert await windows(memory.db, [command.message_id]) == {}, "a memory command has no window"
    second = await memory.record(make_message(2, text="kids loved it"))  # imported late, in between
    assert await windows(memory.db, [first.message_id, second.message_id, third.message_id]) == {
        first.message_id: "how was the weekend kids loved it",
        second.message_id: "how was the weekend kids loved it pottery class",
        third.message_id: "kids loved it pottery class",
    }


async def test_the_window_list_finds_an_answer_by_its_question(memory: MemoryService) -> None:
    await memory.record(make_message(1, sender="a", text="what do your kids like most?"))
    answer = await memory.record(make_message(2, sender="b", text="nature, they adore hiking"))
    await memory.record(make_message(3, sender="a", text="kids grow up fast", time=T0 + timedelta(days=9)))
    await memory.record(make_message(4, sender="b", text="so true", time=T0 + timedelta(days=9, minutes=1)))

    def ranked_ids(window: float) -> RecallSettings:
        return RecallSettings(weights=RecallWeights(window=window, context_spread=0.0))

    attach_recall(memory, ranked_ids(0.0))
    query = RecallQuery("kids like", (answer.chat_id,), T0 + timedelta(days=10), limit=10)
    assert answer.message_id not in [h.id for h in await memory.recall(query)]
    attach_recall(memory, ranked_ids(1.0))
    assert answer.message_id in [h.id for h in await memory.recall(query)]


async def test_neighbours_go_by_time_then_id_and_skip_what_is_not_searchable(memory: MemoryService) -> None:
    same = T0 + timedelta(minutes=5)
    early = await memory.record(make_message(1, text="早", time=T0))
    tied = [await memory.record(make_message(n, text=f"同时 {n}", time=same)) for n in (2, 3, 4)]
    await memory.record(make_message(5, text="/recall 同时", time=same))  # a command: not searchable
    late = await memory.record(make_message(6, text="晚", time=T0 + timedelta(minutes=9)))
    await memory.record(make_message(7, text="别的群", chat="g2", time=same))
    first, middle, last = (r.message_id for r in tied)
    async with memory.db.read() as session:
        found = await neighbours(session, [early.message_id, first, middle, last, late.message_id])
    assert found == {
        early.message_id: (None, first),
        first: (early.message_id, middle),
        middle: (first, last),
        last: (middle, late.message_id),
        late.message_id: (last, None),
    }
