"""What the reply context's sections select for the message answered (QA pass 16)."""

from datetime import timedelta

import pytest

from memory.clock import ManualClock
from memory.context.builder import ContextBuilder, ContextRequest, ReplyContext
from memory.context.jargon_provider import JargonProvider
from memory.context.recent import RecentWindowProvider
from memory.jargon import dictionary
from memory.jargon.explain import JargonExplainer
from memory.recall.setup import attach_recall
from memory.service import ContextSettings, MemoryService
from memory.storage import Database
from tests.conftest import T0, make_message
from tests.memory.recall.conftest import add_history

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
            await dictionary.add_manual(
                session, term, "一个相当长的解释，说明这个词在群里的意思" * 2, None, "t", NOW
            )
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


async def test_a_reply_to_an_old_message_shows_the_message_it_replies_to(db: Database, clock) -> None:
    """Found by QA pass 16: the context ignored `reply_to`, so "这个是什么意思" sent as a reply to a
    message far out of the recent window reached the model with nothing saying what "这个" was. The
    message replied to now has its own one-line section, dated in full, and recall does not repeat it."""
    memory = MemoryService(db, clock, ContextSettings(recent_messages=5))
    attach_recall(memory)
    await memory.record(make_message(1, sender="u1", text="需求又改了，首页banner换成三张轮播"))
    for n in range(2, 30):
        await memory.record(make_message(n, sender="u3", text=f"今天午饭吃了第{n}家面馆"))
    await memory.record(make_message(30, sender="u2", text="首页banner这个是什么意思", reply_to="m1"))
    context = await memory.context_for_reply(1, (await memory.recent(1, 1))[-1])
    [replied] = [s for s in context.sections if s.name == "replied"] or [None]
    assert replied is not None
    assert replied.lines == ["[2026-03-01 12:01] name-u1: 需求又改了，首页banner换成三张轮播"]
    assert context.text.count("需求又改了") == 1, "recall leaves the message replied to out"
    recall = next(s for s in context.sections if s.name == "recall")
    assert recall.lines, "recall still ran on the question"


async def test_a_reply_to_a_message_not_recorded_adds_no_section(memory: MemoryService) -> None:
    await memory.record(make_message(1, text="早"))
    await memory.record(make_message(2, text="这个是什么意思", reply_to="m-never-seen"))
    context = await memory.context_for_reply(1, (await memory.recent(1, 1))[-1])
    assert [s.name for s in context.sections] == ["recent"]


@pytest.mark.parametrize("text", ["[图片]", "@群忆 [图片]", "[表情] [捂脸]", "https://b23.tv/abc123"])
async def test_a_message_of_placeholders_alone_recalls_nothing(db: Database, clock, text: str) -> None:
    """Found by QA pass 16: an image alone ("[图片]") was searched for as text, and the context
    carried eight recalled lines that merely sat next to other images: a quarter of its tokens."""
    memory = MemoryService(db, clock, ContextSettings(recent_messages=3))
    attach_recall(memory)
    for n in range(1, 30):
        said = "[图片]" if n % 3 == 0 else f"第{n}张图片是周末爬山拍的 [表情] https://b23.tv/x{n}"
        await memory.record(make_message(n, sender=f"u{n % 4}", text=said))
    await memory.record(make_message(40, sender="u2", text=text))
    context = await memory.context_for_reply(1, (await memory.recent(1, 1))[-1], text.replace("@群忆", ""))
    assert [s.name for s in context.sections] == ["recent"]


async def _wall_context(db: Database, clock: ManualClock, recent_messages: int) -> ReplyContext:
    """The context of "刷墙是什么意思" in a chat that explained 刷墙 (messages 1-4, packed into a topic
    whose offline summary quotes two of them), then talked of lunch (5-29)."""
    memory = MemoryService(db, clock, ContextSettings(recent_messages=recent_messages))
    attach_recall(memory)
    said = ["又要刷墙了？", "刷墙是什么意思呀", "就是需求推翻重来，一遍遍刷", "我一般听到刷墙就去买咖啡"]
    for n, text in enumerate(said, start=1):
        await memory.record(make_message(n, sender=f"u{n}", text=text))
    for n in range(5, 30):
        await memory.record(make_message(n, sender="u9", text=f"今天午饭吃了第{n}家面馆"))
    ids = [m.id for m in (await memory.recent(1, 30))[:4]]
    summary = "name-u2: 刷墙是什么意思呀 / name-u3: 就是需求推翻重来，一遍遍刷（name-u1、name-u2）"
    async with db.write() as session:
        await add_history(session, 1, "刷墙、需求", summary, T0, T0 + timedelta(minutes=4), ids, ["刷墙"])
    await memory.record(make_message(40, sender="u5", text="刷墙是什么意思"))
    return await memory.context_for_reply(1, (await memory.recent(1, 1))[-1])


async def test_a_recalled_topic_stands_in_for_the_recalled_messages_it_quotes(
    db: Database, clock: ManualClock
) -> None:
    """Found by QA pass 16: an offline topic's summary quotes its central messages, and recall
    returned those messages too, so the context showed "刷墙是什么意思呀" twice, once on its own line
    and once inside the topic's. The topic now takes the place of the first message it quotes."""
    context = await _wall_context(db, clock, recent_messages=3)
    recall = next(s for s in context.sections if s.name == "recall")
    assert any(line.startswith("[topic ") for line in recall.lines)
    assert context.text.count("刷墙是什么意思呀") == 1
    assert context.text.count("就是需求推翻重来") == 1
    assert any("我一般听到刷墙" in line for line in recall.lines), "a message it does not quote stays"


async def test_a_topic_the_recent_window_shows_whole_is_not_recalled(
    db: Database, clock: ManualClock
) -> None:
    """Found by QA pass 16: a topic all of whose messages the recent window shows was recalled too,
    its summary repeating lines the model had just read."""
    context = await _wall_context(db, clock, recent_messages=40)
    assert [s.name for s in context.sections] == ["recent"]


async def test_the_whole_budget_never_cuts_the_recent_window_recall_left_out(
    db: Database, clock: ManualClock
) -> None:
    """Found by QA pass 16: recall leaves out the messages the recent window is measured to show, but
    the window was fitted into the total budget last, after recall and the cards, and lost its older
    lines there: messages neither shown nor recalled. The window is now fitted first (and still shown
    last), and the sections after it share what it leaves."""
    memory = MemoryService(
        db, clock, ContextSettings(total_tokens=700, recent_messages=30, recent_tokens=400)
    )
    attach_recall(memory, context_tokens=600, context_limit=8)
    said = "周末去西湖边喝龙井茶，顺便爬宝石山，再去北山街拍照，晚上在湖滨吃饭，然后坐公交回家"
    for n in range(30):
        await memory.record(make_message(n, sender=f"u{n % 5}", text=f"第{n}条：{said}"))
    await memory.record(make_message(40, sender="u2", text="西湖边喝龙井茶是哪天"))
    window = await memory.recent(1, 30)
    recent = memory.context_providers[0]
    assert isinstance(recent, RecentWindowProvider)
    fitted = await recent.fitting(1, window)
    context = await memory.context_for_reply(1, window[-1])
    shown = {s.name: s for s in context.sections}
    assert len(shown["recent"].lines) == len(fitted) < len(window)
    assert shown["recall"].lines, "recall has what the window leaves"
    assert context.tokens <= 700


async def test_a_reply_recalls_for_the_message_it_replies_to_as_well(
    db: Database, clock: ManualClock
) -> None:
    """Found by QA pass 16: "他这话什么意思" sent as a reply to "第一次冲塔有点兴奋" recalled for its own
    words only, eight lines of other questions "…什么意思", none about what it replied to. Recall now
    searches the question followed by the message it replies to."""
    memory = MemoryService(db, clock, ContextSettings(recent_messages=5))
    attach_recall(memory)
    await memory.record(make_message(1, sender="u1", text="火锅局定在海底捞，周五晚上七点"))
    for n in range(2, 12):
        await memory.record(make_message(n, sender="u3", text=f"第{n}个表情包是什么意思"))
    await memory.record(make_message(12, sender="u4", text="周五的火锅局我就不去了"))
    for n in range(13, 30):
        await memory.record(make_message(n, sender="u5", text=f"今天午饭吃了第{n}家面馆"))
    await memory.record(make_message(30, sender="u2", text="他这话什么意思", reply_to="m12"))
    context = await memory.context_for_reply(1, (await memory.recent(1, 1))[-1])
    recall = next(s for s in context.sections if s.name == "recall")
    assert "火锅局定在海底捞" in recall.lines[0]


async def test_the_slang_of_the_message_replied_to_is_explained(memory: MemoryService) -> None:
    """Found by QA pass 16: "他这话什么意思", a reply to "第一次冲塔有点兴奋" sent days before, had
    冲塔 explained nowhere: only the recent window and the question were read for slang."""
    async with memory.db.write() as session:
        await dictionary.add_manual(session, "冲塔", "通宵加班赶上线", None, "t", NOW)
    await memory.record(make_message(1, sender="u4", text="第一次冲塔有点兴奋"))
    for n in range(2, 30):
        await memory.record(make_message(n, sender="u5", text=f"今天午饭吃了第{n}家面馆"))
    asked = await memory.record(make_message(30, sender="u2", text="他这话什么意思", reply_to="m1"))
    memory.context_providers.append(JargonProvider(JargonExplainer(memory.db), budget_tokens=200))
    memory.context_settings = ContextSettings(recent_messages=5)
    [stored] = [m for m in await memory.recent(1, 1) if m.id == asked.message_id]
    context = await memory.context_for_reply(1, stored)
    assert [s.lines for s in context.sections if s.name == "jargon"] == [["冲塔: 通宵加班赶上线"]]
