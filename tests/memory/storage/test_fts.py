import pytest

from memory.recall.lexical import search_messages
from memory.service import MemoryService
from memory.storage.fts import match_expression
from tests.conftest import make_message

HOSTILE = [
    '"quoted',
    'a"b"c',
    "foo*",
    "bar NEAR baz",
    "-minus",
    "(unbalanced",
    "brackets]",
    "AND OR NOT",
    "^start",
    "col:umn",
]


@pytest.mark.parametrize("query", HOSTILE)
async def test_operator_characters_search_as_text(memory: MemoryService, query: str) -> None:
    await memory.record(make_message(1, text=f"message with {query} inside"))
    await memory.record(make_message(2, text="unrelated words only"))
    hits = await memory.search([1], query)
    assert hits, f"no hit for {query!r}"
    assert hits[0].text == f"message with {query} inside"


async def test_query_of_only_punctuation_finds_nothing_without_error(memory: MemoryService) -> None:
    await memory.record(make_message(1, text="hello"))
    assert await memory.search([1], '"*()-^') == []
    assert match_expression("***") is None


async def test_chinese_and_english_in_one_message(memory: MemoryService) -> None:
    await memory.record(make_message(1, text="周末去杭州爬山, then hotpot at night"))
    await memory.record(make_message(2, text="明天开会讨论预算"))
    # Recall also returns the turns around a match (context spread), after the match itself.
    assert (await memory.search([1], "杭州"))[0].text == "周末去杭州爬山, then hotpot at night"
    assert (await memory.search([1], "HOTPOT"))[0].text == "周末去杭州爬山, then hotpot at night"
    assert next(h.text for h in await memory.search([1], "预算会议")) == "明天开会讨论预算"


async def test_search_is_scoped_to_the_chat(memory: MemoryService) -> None:
    await memory.record(make_message(1, chat="g1", text="secret plan in group one"))
    await memory.record(make_message(1, chat="g2", text="another plan in group two"))
    g1 = await memory.chat("test", "g1")
    g2 = await memory.chat("test", "g2")
    assert g1 and g2
    assert [h.text for h in await memory.search([g2.id], "secret plan")] == ["another plan in group two"]
    assert all(h.chat_id == g1.id for h in await memory.search([g1.id], "plan"))


async def test_english_words_match_by_stem_not_by_prefix(memory: MemoryService) -> None:
    await memory.record(make_message(1, text="my car broke down on the highway"))
    await memory.record(make_message(2, text="take care of yourself"))
    await memory.record(make_message(3, text="both cars need new tyres"))
    found = {m.text for m, _ in await search_messages(memory.db, [1], "car", 10)}
    assert found == {"my car broke down on the highway", "both cars need new tyres"}


async def test_a_word_new_to_jieba_is_found_however_jieba_cut_it(memory: MemoryService) -> None:
    """Found by QA pass 16: a chat's slang, new to jieba, is glued to its neighbours one way in one
    sentence and cut another way in the next (冲塔输, 订冲塔, 别冲塔, 要冲|塔), so a
    search for it missed most messages holding it. The index also holds the 2-character pieces of
    words jieba made up and around lone characters, and a query is cut the same way."""
    glued = ["上次冲塔输惨了", "我帮大家订冲塔的夜宵", "老赵值班记得别冲塔", "晚上要冲塔", "冲塔开始了"]
    for i, text in enumerate([*glued, "明天开会讨论预算", "黄焖鸡吃腻了"], start=1):
        await memory.record(make_message(i, text=text))
    found = {m.text for m, _ in await search_messages(memory.db, [1], "冲塔", 10)}
    assert found == set(glued)
