"""Keyword rarity: the keyword-overlap signal weighs each question word by its inverse document
frequency among the messages of the chats searched, and only those chats."""

from datetime import timedelta

import pytest

from memory.recall import RecallQuery
from memory.recall.keywords import query_keywords
from memory.recall.rarity import inverse_document_frequency, keyword_rarity
from memory.service import MemoryService
from tests.conftest import T0, chat_ids, make_message
from tests.memory.recall.conftest import with_weights

COMMON = ["周末去爬山了", "周末加班好累", "这个周末下雨", "周末有人打球吗", "周末的电影不错"]
RARE = "报了个陶艺班，手作很解压"
FILLER = ["今天吃什么", "下午开会", "谁有充电器", "快递到了", "明天降温", "新来的同事挺好"]
EVERYWHERE = "打卡"


async def corpus(memory: MemoryService) -> tuple[int, int]:
    texts = [f"{EVERYWHERE}，{text}" for text in [*COMMON, RARE, *FILLER]]
    for n, text in enumerate(texts, start=1):
        await memory.record(make_message(n, text=text, time=T0 + timedelta(hours=3 * n)))
    for n in range(20):  # in another chat the rare word is everywhere
        await memory.record(make_message(100 + n, chat="g2", text=f"陶艺课第{n}次"))
    g1, g2 = await chat_ids(memory, "g1", "g2")
    return g1, g2


async def test_rare_words_weigh_more_and_only_the_chat_searched_counts(
    recall_memory: MemoryService,
) -> None:
    g1, g2 = await corpus(recall_memory)
    keywords = query_keywords("周末 陶艺 打卡")
    async with recall_memory.db.read() as session:
        in_g1 = await keyword_rarity(session, (g1,), keywords)
        in_g2 = await keyword_rarity(session, (g2,), keywords)
    documents = len(COMMON) + 1 + len(FILLER)
    assert in_g1["陶艺"] == pytest.approx(inverse_document_frequency(1, documents))
    assert in_g1["周末"] == pytest.approx(inverse_document_frequency(len(COMMON), documents))
    assert in_g1["陶艺"] > in_g1["周末"] > 0
    assert in_g1["打卡"] == 0.0, "a word in half the messages or more weighs nothing"
    assert in_g2["陶艺"] == 0.0, "g2's counts are g2's own"


async def test_the_rare_word_earns_the_larger_overlap_boost(recall_memory: MemoryService) -> None:
    g1, _ = await corpus(recall_memory)
    with_weights(recall_memory, context_spread=0.0, window=0.0)
    hits = await recall_memory.recall(RecallQuery("周末 陶艺", (g1,), T0 + timedelta(days=2)))
    boost = {hit.text: hit.signals.get("keyword_overlap", 1.0) for hit in hits}
    rare = boost[f"{EVERYWHERE}，{RARE}"]
    common = boost[f"{EVERYWHERE}，{COMMON[0]}"]
    assert rare > common > 1.0
    assert hits[0].text.endswith(RARE)


async def test_a_question_of_more_words_than_sqlite_joins_in_one_statement(
    recall_memory: MemoryService,
) -> None:
    g1, _g2 = await corpus(recall_memory)
    keywords = query_keywords(" ".join(f"kw{i}" for i in range(900)) + " 陶艺")
    assert len(keywords) == 901
    async with recall_memory.db.read() as session:
        rarity = await keyword_rarity(session, (g1,), keywords)
    assert len(rarity) == 901 and rarity["kw899"] == rarity["kw0"] > rarity["陶艺"] > 0
    # recall reads the head of a long question (MAX_QUESTION_CHARS): the rare word leads it here
    question = " ".join(k.term for k in [keywords[-1], *keywords[:-1]])
    hits = await recall_memory.recall(RecallQuery(question, (g1,), T0 + timedelta(days=3)))
    assert hits[0].text.endswith(RARE)
