"""A flood message (tens of thousands of characters in one run) is recorded and searched; recall reads
only the head of a very long question. (How long they take is measured by `qunyi bench`, not here.)"""

from __future__ import annotations

from memory.clock import ManualClock
from memory.persons.config import PersonsConfig
from memory.persons.service import PersonMemory
from memory.recall import RecallQuery
from memory.recall.pipeline import MAX_QUESTION_CHARS
from memory.recall.setup import attach_recall
from memory.service import MemoryService
from memory.storage import Database
from tests.conftest import T0, make_message


async def test_a_flood_of_unknown_characters_is_recorded(db: Database, clock: ManualClock) -> None:
    memory = MemoryService(db, clock)
    PersonMemory(db, PersonsConfig).attach(memory)
    await memory.record(make_message(1, text="叫我小红就行"))  # jieba and the observers warmed up
    recorded = await memory.record(make_message(2, text="/recall " + "西" * 60_000))
    assert recorded.created


async def test_recall_reads_only_the_head_of_a_very_long_question(db: Database, clock: ManualClock) -> None:
    memory = MemoryService(db, clock)
    attach_recall(memory)
    await memory.record(make_message(1, text="周六去西湖边爬山"))
    chat = (await memory.recent(1, 1))[0].chat_id

    async def found(question: str) -> list[str]:
        return [hit.text for hit in await memory.recall(RecallQuery(question, (chat,), T0))]

    assert await found("哈" * (MAX_QUESTION_CHARS - 10) + " 西湖") == ["周六去西湖边爬山"]
    assert await found("哈" * MAX_QUESTION_CHARS + " 西湖") == []
    assert await found("".join(chr(0x4E00 + (i * 7919) % 20_000) for i in range(50_000))) == []
