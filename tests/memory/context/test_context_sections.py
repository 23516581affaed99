"""What the reply context's sections select for the message answered (QA pass 16)."""

from memory.context.builder import ContextBuilder, ContextRequest
from memory.context.jargon_provider import JargonProvider
from memory.jargon import dictionary
from memory.jargon.explain import JargonExplainer
from memory.service import MemoryService
from tests.conftest import T0, make_message

NOW = T0.timestamp()


async def test_the_term_the_question_asks_about_is_explained_before_the_windows_terms(
    memory: MemoryService,
) -> None:
    """Found by QA pass 16: terms were listed in the order the window first used them, oldest message
    first and the message answered last, and the section is cut from its end; so "冲塔是什么意思" in a
    chat whose window used a few other terms had 冲塔 cut while the terms nobody asked about stayed."""
    window_terms = [f"黑话{n}号" for n in range(12)]
    async with memory.db.write() as session:
        for term in [*window_terms, "冲塔"]:
            await dictionary.add_manual(session, term, "一个相当长的解释，说明这个词在群里的意思" * 2, None, "t", NOW)
    for n, term in enumerate(window_terms):
        await memory.record(make_message(n, text=f"今天又{term}了"))
    await memory.record(make_message(20, sender="u2", text="你们说的冲塔是什么意思"))
    window = await memory.recent(1, 30)
    provider = JargonProvider(JargonExplainer(memory.db), budget_tokens=120)
    request = ContextRequest(1, window[-1], window, T0, query=window[-1].text)
    context = await ContextBuilder([provider], 2000).build(request)
    [section] = context.sections
    assert section.lines[0].startswith("冲塔: ")
    assert len(section.lines) < len(window_terms) + 1, "the budget cuts some terms"
    kept = [line.split(":")[0] for line in section.lines[1:]]
    assert kept == window_terms[::-1][: len(kept)], "then the newest messages' terms"
