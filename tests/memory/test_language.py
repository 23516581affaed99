"""Which language a chat writes in, for the words Qunyi writes itself (`memory.text.language`)."""

from __future__ import annotations

from memory.messages import chat_language
from memory.service import MemoryService
from memory.text.language import language_of
from tests.conftest import make_message


def test_a_chat_writing_mostly_latin_words_is_english_else_chinese() -> None:
    assert language_of(["who's up for raid night tomorrow?", "sooo in ngl"]) == "en"
    assert language_of(["周六去爬山吗？", "可以"]) == "zh"
    assert language_of([]) == "zh" and language_of(["😂👍", "+1"]) == "zh", "nothing to tell: Chinese"
    assert language_of(["@小忆 /who me"]) == "zh", "a command and one word tell nothing: Chinese"
    assert language_of(["raid tank"]) == "zh" and language_of(["raid tank"], min_words=1) == "en"


def test_english_names_slang_links_and_code_in_a_chinese_chat_leave_it_chinese() -> None:
    assert language_of(["B群 yyds 啊", "A股又跌了"]) == "zh"
    assert language_of(["今天 standup 又拖了半小时，真的 burnout 了"]) == "zh"
    assert language_of(["看这个 https://github.com/org/repo/issues/12345 @someone_else_here"]) == "zh"
    assert language_of(["改成这样就好了\n```python\nfor item in items:\n    print(item.name)\n```"]) == "zh"


async def test_a_chats_language_is_read_from_its_members_latest_messages(memory: MemoryService) -> None:
    for n, text in enumerate(["good morning all", "anyone up for lunch?", "yes pizza pls"], start=1):
        await memory.record(make_message(n, chat="en", text=text))
    for n, text in enumerate(["早上好", "中午吃啥"], start=10):
        await memory.record(make_message(n, chat="zh", text=text))
    english_bot = "I am the bot and I speak English " * 9
    await memory.record(make_message(20, chat="zh", sender="bot", text=english_bot, is_bot=True))
    await memory.record(make_message(21, chat="new", sender="bot", text=english_bot, is_bot=True))
    en, zh, new = [await memory.chat("test", c) for c in ("en", "zh", "new")]
    assert en is not None and zh is not None and new is not None
    async with memory.db.read() as session:
        assert await chat_language(session, en.id) == "en"
        assert await chat_language(session, zh.id) == "zh", "the bot's own messages are not the chat's"
        assert await chat_language(session, new.id) == "zh"
        assert await chat_language(session, new.id, ["what did Tom say"]) == "en", "the question counts"
