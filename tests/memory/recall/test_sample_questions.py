"""Recall answers the sample chat's own questions from what was said before them (samples/README.md,
"The bot's replies"), as the reply context would: the question without the bot's name, 8 memories."""

from pathlib import Path

import pytest

from adapters.importers.replay_jsonl import parse_record
from bot.config.settings import BotSettings
from bot.reply.policy import without_bot_names
from memory.clock import ManualClock
from memory.recall import RecallQuery
from memory.recall.setup import DEFAULT_CONTEXT_LIMIT, attach_recall
from memory.service import MemoryService
from memory.storage import Database

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "group_chat.jsonl"


@pytest.mark.parametrize(
    ("question", "evidence"),
    [
        ("m177", {"m166"}),  # when/where is the hike → the final plan
        ("m365", {"m207"}),  # when was the last 开炉, who booked → 老赵's booking
    ],
)
async def test_a_sample_question_recalls_its_answer(db: Database, question: str, evidence: set[str]) -> None:
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    said = [parse_record(line) for line in lines]
    asked = next(m for m in said if m.message_id == question)
    memory = MemoryService(db, ManualClock(asked.time))
    attach_recall(memory)
    for message in said:
        if message.message_id == question:
            break
        await memory.record(message)
    chat = await memory.chat("replay", asked.chat_id)
    assert chat is not None
    text = without_bot_names(asked.text, BotSettings())
    hits = await memory.recall(RecallQuery(text, (chat.id,), asked.time, limit=DEFAULT_CONTEXT_LIMIT))
    found = {hit.id for hit in hits if hit.kind == "message"}
    stored = {m.platform_message_id: m.id for m in await memory.recent(chat.id, 1000)}
    assert {stored[e] for e in evidence} <= found
