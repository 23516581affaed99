"""The reply model calls note_set, then recall, and its answer uses both — real client, fake server."""

import asyncio
import json
from datetime import timedelta
from pathlib import Path

from bot.app import build_app
from bot.config import ConfigStore
from bot.config.settings import Settings
from bot.llm import LLMSettings
from bot.reply.pipeline import Outcome
from bot.reply.policy import without_bot_names
from memory.clock import ManualClock
from memory.models import ChatHistory
from memory.notes import NoteStore
from memory.types import ChatMessage
from tests.conftest import T0, make_message
from tests.fakes.openai_server import Answer, FakeOpenAI, Hold, tool_call
from tests.memory.recall.conftest import add_history


def llm_settings(base_url: str) -> Settings:
    llm = LLMSettings(enabled=True, base_url=base_url, model="fake-chat", max_retries=0, backoff_seconds=0)
    return Settings(llm=llm)


async def test_reply_uses_note_set_and_recall(tmp_path: Path, fake_llm: FakeOpenAI) -> None:
    clock = ManualClock(T0)
    app = await build_app(ConfigStore(llm_settings(fake_llm.base_url), None), tmp_path / "data", clock)
    sent = []

    async def send(chat_id, text, *, chat_kind, reply_to):
        sent.append(text)
        return make_message(900, text=text, sender="bot", is_bot=True, reply_to=reply_to)

    fake_llm.script(
        Answer(
            None,
            tool_calls=[tool_call("note_set", {"name": "徒步", "content": "周日九溪徒步, 08:30 集合"}, "c1")],
        ),
        Answer(None, tool_calls=[tool_call("recall", {"query": "九溪"}, "c2")]),
        Answer("记下了: 周日 08:30 在九溪集合 (浩子说带水)"),
    )
    try:
        await app.pipeline.handle(make_message(1, sender="u3", text="周日九溪徒步, 我带水"), send)
        outcome = await app.pipeline.handle(
            make_message(2, sender="u1", text="@群忆 记一下徒步安排", to_bot=True, mentions=("bot",)), send
        )
        note = await app.memory.notes.for_chat("test:g1").get("徒步")
    finally:
        await app.close()

    assert outcome.reply == "记下了: 周日 08:30 在九溪集合 (浩子说带水)"
    assert sent == [outcome.reply]
    assert note == "周日九溪徒步, 08:30 集合"
    requests = fake_llm.chat_requests
    assert len(requests) == 3
    assert requests[0].body["tools"] and {t["function"]["name"] for t in requests[0].body["tools"]} >= {
        "note_set",
        "recall",
    }
    tool_results = [m for m in requests[2].messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_results] == ["c1", "c2"]
    assert "周日九溪徒步, 我带水" in tool_results[1]["content"], "recall found the raw message"
    assert "tools" not in requests[2].body or not requests[2].body["tools"] or len(requests) == 3
    system = json.dumps(requests[0].messages, ensure_ascii=False)
    assert "<memory" in system and "周日九溪徒步" in system


async def test_a_thinking_models_tool_rounds_give_its_reasoning_back(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """DeepSeek's thinking mode (deepseek-reasoner, V3.2) refuses a tool round whose assistant message
    lacks the `reasoning_content` it sent with its tool calls (HTTP 400): the tool loop dropped it, so
    every reply that used a tool went unanswered."""
    fake_llm.wants_reasoning_back = True
    app = await build_app(
        ConfigStore(llm_settings(fake_llm.base_url), None), tmp_path / "data", ManualClock(T0)
    )

    async def send(chat_id, text, *, chat_kind, reply_to):
        return make_message(900, text=text, sender="bot", is_bot=True, reply_to=reply_to)

    fake_llm.script(
        Answer(None, tool_calls=[tool_call("recall", {"query": "九溪"}, "c1")], reasoning="先查一下记忆"),
        Answer("周日九溪徒步", reasoning="找到了"),
    )
    try:
        await app.pipeline.handle(make_message(1, sender="u3", text="周日九溪徒步"), send)
        outcome = await app.pipeline.handle(
            make_message(2, sender="u1", text="@群忆 徒步去哪？", to_bot=True, mentions=("bot",)), send
        )
    finally:
        await app.close()
    assert outcome.reply == "周日九溪徒步"
    [asked] = [m for m in fake_llm.chat_requests[1].messages if m.get("tool_calls")]
    assert asked["reasoning_content"] == "先查一下记忆"


async def test_a_note_an_admin_edits_while_the_model_thinks_keeps_the_admins_text(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """The model read a note (note_get), and while it thought an admin edited the note (`qunyi notes
    set`, the web console); its note_set, made from the older text, then replaced the admin's edit
    without a word. It is now refused with an error telling the model to read the note again."""
    app = await build_app(
        ConfigStore(llm_settings(fake_llm.base_url), None), tmp_path / "data", ManualClock(T0)
    )

    async def send(chat_id, text, *, chat_kind, reply_to):
        return make_message(900, text=text, sender="bot", is_bot=True, reply_to=reply_to)

    stale = tool_call("note_set", {"name": "群规", "content": "规则一：周六爬山\n规则二：带水"}, "c2")
    thinking = Hold(Answer(None, tool_calls=[stale]))
    fake_llm.script(
        Answer(None, tool_calls=[tool_call("note_get", {"name": "群规"}, "c1")]), thinking, Answer("好的")
    )
    try:
        notes = app.memory.notes.for_chat("test:g1")
        await notes.set("群规", "规则一：周六爬山")
        admin = NoteStore(notes.root)  # the CLI or the console: another process
        ask = make_message(1, sender="u1", text="@群忆 群规加一条：带水", to_bot=True, mentions=("bot",))
        reply = asyncio.create_task(app.pipeline.handle(ask, send))
        await thinking.reached.wait()
        await admin.set("群规", "规则一：周日爬山（管理员改）")
        thinking.release.set()
        outcome = await reply
        note = await notes.get("群规")
    finally:
        await app.close()

    assert note == "规则一：周日爬山（管理员改）"
    assert outcome.reply == "好的"
    results = [m for m in fake_llm.chat_requests[2].messages if m["role"] == "tool"]
    assert results[-1]["tool_call_id"] == "c2" and "was changed since" in results[-1]["content"]


async def test_tool_arguments_encoded_twice_are_read_once_more(tmp_path: Path, fake_llm: FakeOpenAI) -> None:
    """A model sending a tool call's arguments as a JSON string whose text is the JSON object
    (`"{\\"query\\": \\"九溪\\"}"`) got "error: arguments for recall are not a JSON object" for every
    call, and retried or answered without its tool. Such arguments are now decoded once more; a string
    holding anything but an object keeps the error."""
    app = await build_app(
        ConfigStore(llm_settings(fake_llm.base_url), None), tmp_path / "data", ManualClock(T0)
    )

    async def send(chat_id, text, *, chat_kind, reply_to):
        return make_message(900, text=text, sender="bot", is_bot=True, reply_to=reply_to)

    twice = json.dumps(json.dumps({"query": "九溪"}, ensure_ascii=False), ensure_ascii=False)
    a_list = json.dumps(json.dumps(["九溪"], ensure_ascii=False), ensure_ascii=False)
    fake_llm.script(
        Answer(None, tool_calls=[tool_call("recall", twice, "c1"), tool_call("recall", a_list, "c2")]),
        Answer("周日九溪, 浩子带水"),
    )
    try:
        await app.pipeline.handle(make_message(1, sender="u3", text="周日九溪徒步, 我带水"), send)
        question = make_message(2, sender="u1", text="@群忆 九溪那次谁带水", to_bot=True, mentions=("bot",))
        outcome = await app.pipeline.handle(question, send)
    finally:
        await app.close()
    assert outcome.reply == "周日九溪, 浩子带水"
    found, refused = [m["content"] for m in fake_llm.chat_requests[1].messages if m["role"] == "tool"]
    assert "周日九溪徒步, 我带水" in found and "error" not in found
    assert "error: arguments for recall are not a JSON object" in refused


async def test_no_model_means_quiet_but_recorded(tmp_path: Path) -> None:
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", ManualClock(T0))
    try:

        async def send(*_args, **_kwargs):
            raise AssertionError("nothing is sent without a model")

        outcome = await app.pipeline.handle(make_message(1, text="@群忆 在吗", to_bot=True), send)
    finally:
        await app.close()
    assert outcome.recorded and outcome.reply is None and "no reply model" in outcome.reason


def test_the_question_for_recall_leaves_out_the_bots_names() -> None:
    bot = Settings().bot.model_copy(update={"name": "群忆", "aliases": ["Qunyi", "小忆"]})
    assert without_bot_names("@群忆 上次开炉是哪天？", bot) == "上次开炉是哪天？"
    assert without_bot_names("＠QUNYI when is the hike, 小忆?", bot) == "when is the hike, ?"
    assert without_bot_names("开炉", bot) == "开炉"
    assert without_bot_names("＠ＱＵＮＹＩ 开炉是哪天？", bot) == "开炉是哪天？"  # as decide reads it
    assert without_bot_names("qUNYI, 小忆！", bot) == ", ！"


async def _ask_the_bot_by_name(
    tmp_path: Path, fake_llm: FakeOpenAI, earlier: str, question: ChatMessage
) -> tuple[Outcome, str]:
    """`earlier` (naming the bot) said long before the question, then the question asked: the outcome
    and the reply model's prompt."""
    data = tmp_path / "data"
    app = await build_app(ConfigStore(llm_settings(fake_llm.base_url), None), data, ManualClock(T0))

    async def send(chat_id, text, *, chat_kind, reply_to):
        return make_message(900, text=text, sender="bot", is_bot=True, reply_to=reply_to)

    fake_llm.script(Answer("周五"))
    chat = [(1, "u2", earlier), (40, "u3", "周五晚上开炉，老地方")]
    chat += [(n, "u4", f"闲聊 {n}") for n in (*range(2, 40), *range(41, 80))]  # out of the recent window
    try:
        for n, sender, text in sorted(chat):
            await app.memory.record(make_message(n, sender=sender, text=text))
        outcome = await app.pipeline.handle(question, send)
    finally:
        await app.close()
    return outcome, json.dumps(fake_llm.chat_requests[-1].messages, ensure_ascii=False)


async def test_recall_before_a_reply_is_not_led_by_the_bots_name(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    question = make_message(80, sender="u1", text="@群忆 开炉是哪天", to_bot=True)
    _, system = await _ask_the_bot_by_name(tmp_path, fake_llm, "@群忆 帮我记一下交周报", question)
    assert "周五晚上开炉" in system
    assert "交周报" not in system, "sharing only the bot's name is no reason to recall a message"


async def test_a_full_width_name_of_the_bot_does_not_lead_recall_either(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """Named as ＱＵＮＹＩ the bot answered (policy folds widths), but the name stayed in the question
    and recalled every earlier message that named it."""
    question = make_message(80, sender="u1", text="ＱＵＮＹＩ 开炉是哪天")
    outcome, system = await _ask_the_bot_by_name(tmp_path, fake_llm, "qunyi 帮我记一下交周报", question)
    assert outcome.reason == "named"
    assert "周五晚上开炉" in system
    assert "交周报" not in system


async def test_a_topic_counts_once_per_reply_however_often_the_model_recalls_it(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    clock = ManualClock(T0 + timedelta(days=3))
    app = await build_app(ConfigStore(llm_settings(fake_llm.base_url), None), tmp_path / "data", clock)

    async def send(chat_id, text, *, chat_kind, reply_to):
        return make_message(900, text=text, sender="bot", is_bot=True, reply_to=reply_to)

    fake_llm.script(
        Answer(None, tool_calls=[tool_call("recall", {"query": "开炉"}, "c1")]),
        Answer(None, tool_calls=[tool_call("recall", {"query": "开炉 老地方"}, "c2")]),
        Answer("周五"),
    )
    try:
        await app.memory.record(make_message(1, text="周五晚上开炉，老地方"))
        async with app.memory.db.write() as session:
            # of messages out of the recent window: a topic the window shows whole is not recalled
            topic = await add_history(session, 1, "开炉聚餐", "周五晚上开炉，老地方火锅", T0, T0, [])
        question = make_message(50, sender="u2", text="@群忆 开炉是哪天", to_bot=True, time=clock.now())
        await app.pipeline.handle(question, send)
        async with app.memory.db.read() as session:
            count = (await session.get_one(ChatHistory, topic)).count
    finally:
        await app.close()
    assert "开炉聚餐" in fake_llm.chat_requests[0].messages[1]["content"], "the context showed the topic"
    assert all("开炉聚餐" in m["content"] for m in fake_llm.chat_requests[2].messages if m["role"] == "tool")
    assert count == 1
