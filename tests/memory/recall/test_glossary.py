"""Group slang in recall: a term in the question searches for its meaning, and the question's words
search for the terms whose meaning uses them; only under the chat's jargon scope."""

from datetime import timedelta

from bot.commands import answers
from memory.jargon import dictionary
from memory.jargon.dictionary import Scope
from memory.jargon.explain import JargonExplainer
from memory.recall.glossary import JargonGlossary
from memory.recall.keywords import query_keywords
from memory.service import MemoryService
from tests.conftest import T0, make_message
from tests.memory.recall.conftest import ask, with_weights

HOTPOT = "周五晚上巴蜀老灶，火锅位子老赵搞定了"
KAILU = "今晚开炉！老地方见"
NOISE = ["下周的会议改到周三", "周报记得周五前交", "新来的实习生挺靠谱"]
NOW = T0 + timedelta(days=3)


async def corpus(memory: MemoryService, scope: Scope = "global") -> int:
    texts = [HOTPOT, *NOISE, KAILU]
    for n, text in enumerate(texts, start=1):
        # hours apart: no turn window or context spread joins them
        await memory.record(make_message(n, text=text, time=T0 + timedelta(hours=3 * n)))
    await memory.record(make_message(99, chat="g2", text="g2 的消息"))
    memory.recaller.glossary = JargonGlossary(JargonExplainer(memory.db))
    with_weights(memory, context_spread=0.0, window=0.0)  # neighbours would lend their scores
    chat = await memory.chat("test", "g1")
    assert chat is not None
    return chat.id


async def add_term(memory: MemoryService, term: str, meaning: str, chat_id: int | None) -> None:
    async with memory.db.write() as session:
        await dictionary.add_manual(session, term, meaning, chat_id, "admin", NOW.timestamp())


async def test_a_term_in_the_question_finds_its_meaning(recall_memory: MemoryService) -> None:
    g1 = await corpus(recall_memory)
    assert HOTPOT not in await ask(recall_memory, g1, "上次开炉在哪", NOW)
    await add_term(recall_memory, "开炉", "一起去吃火锅聚餐", None)
    found = await ask(recall_memory, g1, "上次开炉在哪", NOW)
    assert HOTPOT in found, "the dictionary changed, so the glossary is rebuilt"
    assert not any(text in found for text in NOISE)
    answer = await answers.recall(recall_memory, g1, "上次开炉在哪")
    by_text = {item["text"]: item["found_by"] for item in answer.data["results"]}
    assert by_text[HOTPOT] == {"jargon": 1}, "the JSON says which candidate list found a memory"
    assert by_text[KAILU]["lexical"] == 1
    with_weights(recall_memory, jargon=0.0, context_spread=0.0, window=0.0)
    assert HOTPOT not in await ask(recall_memory, g1, "上次开炉在哪", NOW)


async def test_the_meaning_in_plain_words_finds_the_term(recall_memory: MemoryService) -> None:
    g1 = await corpus(recall_memory)
    await add_term(recall_memory, "开炉", "一起去吃火锅聚餐", None)
    found = await ask(recall_memory, g1, "聚餐去的哪家店", NOW)
    assert KAILU in found
    assert not any(text in found for text in NOISE)


async def test_another_chats_slang_stays_out_under_chat_scope(recall_memory: MemoryService) -> None:
    g1 = await corpus(recall_memory, scope="chat")
    g2 = await recall_memory.chat("test", "g2")
    assert g2 is not None
    await add_term(recall_memory, "开炉", "一起去吃火锅聚餐", g2.id)
    assert HOTPOT not in await ask(recall_memory, g1, "上次开炉在哪", NOW)
    assert KAILU not in await ask(recall_memory, g1, "聚餐去的哪家店", NOW)
    await add_term(recall_memory, "开炉", "一起去吃火锅聚餐", g1)
    assert HOTPOT in await ask(recall_memory, g1, "上次开炉在哪", NOW)


async def test_the_most_specific_shared_word_picks_the_term(recall_memory: MemoryService) -> None:
    g1 = await corpus(recall_memory)
    await add_term(recall_memory, "开炉", "一起去吃火锅聚餐", None)
    for n in range(8):  # many meanings say 一起, none says 火锅
        await add_term(recall_memory, f"黑话{n}", f"大家一起做第{n}件事", None)
    glossary = recall_memory.recaller.glossary
    assert glossary is not None
    match = await glossary.expansion([g1], "一起吃火锅", query_keywords("一起吃火锅"))
    assert match is not None
    assert '"开炉"' in match
    assert "黑话" not in match, "一起 is in most meanings, so it names no term"
