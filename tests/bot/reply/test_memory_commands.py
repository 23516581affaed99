"""`/recall`, `/who`, `/what` in chat: plain, full-width, after a mention of the bot, or with an @suffix."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.app import App, build_app
from bot.config import ConfigStore
from bot.config.settings import Settings
from bot.reply.pipeline import Send
from bot.tools.service_backend import ServiceMemoryTools
from memory import commands
from memory.clock import ManualClock
from memory.persons.store import person_ids_for
from memory.types import ChatMessage, MembershipChange
from tests.conftest import T0, chat_ids, make_message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/recall 西湖", ("recall", "西湖", False)),
        ("／WHO　小红", ("who", "小红", False)),
        ("／ｒｅｃａｌｌ　西湖　ｙｙｄｓ", ("recall", "西湖　ｙｙｄｓ", False)),
        ("＠群忆　／Ｗｈａｔ ｙｙｄｓ", ("what", "ｙｙｄｓ", True)),
        ("@群忆 /who 小红", ("who", "小红", True)),
        ("＠群忆  @小忆 /what yyds", ("what", "yyds", True)),
        ("/recall@qunyi_bot 爬山 周六", ("recall", "爬山 周六", True)),
        ("/what", ("what", "", False)),
    ],
)
def test_commands_are_parsed(text: str, expected: tuple[str, str, bool]) -> None:
    command = commands.parse(text)
    assert command is not None
    assert (command.name, command.argument, command.addressed) == expected
    assert commands.is_memory_command(text)


@pytest.mark.parametrize(
    "text", ["/recall西湖", "/help me", "去 /recall 西湖", "@群忆 在吗", "recall 西湖", ""]
)
def test_other_text_is_no_command(text: str) -> None:
    assert commands.parse(text) is None


@asynccontextmanager
async def answering(
    tmp_path: Path, settings: Settings | None = None, config: Path | None = None
) -> AsyncIterator[tuple[App, Send, list[str]]]:
    """A bot over a new database (its settings `settings`, or read from the file `config`, which it
    reloads), the `send` it answers through and the texts it sent."""
    store = ConfigStore.load(config) if config is not None else ConfigStore(settings or Settings(), None)
    app = await build_app(store, tmp_path / "data", ManualClock(T0))
    sent: list[str] = []

    async def send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
        sent.append(text)
        return make_message(100 + len(sent), chat=_chat, sender="bot", text=text, is_bot=True)

    try:
        yield app, send, sent
    finally:
        await app.close()


async def test_addressed_commands_are_answered_only_when_addressed_to_the_bot(tmp_path: Path) -> None:
    async with answering(tmp_path) as (app, send, sent):
        await app.pipeline.handle(make_message(1, text="周六去西湖边爬山"), send)
        telegram = await app.pipeline.handle(
            make_message(2, text="/recall@qunyi_bot 西湖", to_bot=True), send
        )
        other = await app.pipeline.handle(make_message(3, text="/recall@other_bot 西湖"), send)
        qq = await app.pipeline.handle(make_message(4, text="@群忆 /recall 西湖", to_bot=True), send)
    assert telegram.reason == "command" and qq.reason == "command"
    assert other.reason != "command" and other.reply is None
    assert len(sent) == 2 and all("西湖边爬山" in text for text in sent)


async def test_recall_in_chat_opens_other_chats_only_to_the_people_listed(tmp_path: Path) -> None:
    settings = Settings.model_validate({"recall": {"per_person_cross_chat": ["test:alice"]}})
    async with answering(tmp_path, settings) as (app, send, _sent):
        await app.pipeline.handle(make_message(1, chat="g2", sender="alice", text="周六去西湖边爬山"), send)
        await app.pipeline.handle(make_message(2, chat="g1", sender="bob", text="大家好"), send)
        alice = await app.pipeline.handle(
            make_message(3, chat="g1", sender="alice", text="/recall 西湖"), send
        )
        bob = await app.pipeline.handle(make_message(4, chat="g1", sender="bob", text="/recall 西湖"), send)
        async with app.db.read() as session:
            asker = (await person_ids_for(session, "test", ["alice"]))["alice"]
        as_alice = await ServiceMemoryTools(app.memory, asker=asker).recall("test:g1", "西湖", 5)
        anonymous = await ServiceMemoryTools(app.memory).recall("test:g1", "西湖", 5)
    assert alice.reply is not None and "西湖边爬山" in alice.reply, "alice may read the chats she is in"
    assert bob.reply is not None and "西湖边爬山" not in bob.reply, "bob reads only this chat"
    assert "西湖边爬山" in as_alice and "西湖边爬山" not in anonymous, (
        "the model's recall tool follows the asker"
    )


async def test_recall_in_chat_no_longer_reads_a_chat_its_asker_left_until_they_rejoin(tmp_path: Path) -> None:
    """A member listed in per_person_cross_chat who left (or was removed from) a chat kept reading it
    from every other chat: no adapter told memory of a leave, so the membership never ended."""
    settings = Settings.model_validate({"recall": {"per_person_cross_chat": ["test:alice"]}})

    def membership(minutes: int, joined: bool) -> MembershipChange:
        return MembershipChange("test", ("g2",), "alice", T0 + timedelta(minutes=minutes), joined=joined)

    stopping = asyncio.Event()
    async with answering(tmp_path, settings) as (app, send, _sent):

        async def recall_as_alice(n: int) -> str | None:
            return (
                await app.pipeline.handle(make_message(n, sender="alice", text="/recall 西湖"), send)
            ).reply

        await app.pipeline.handle(make_message(1, chat="g2", sender="alice", text="周六去西湖边爬山"), send)
        await app.pipeline.handle(make_message(2, sender="alice", text="大家好"), send)
        await app.pipeline.handle_inbound(membership(3, joined=False), send, stopping)
        after_leaving = await recall_as_alice(4)
        await app.pipeline.handle_inbound(membership(5, joined=True), send, stopping)
        after_rejoining = await recall_as_alice(6)
    assert after_leaving is not None and "西湖边爬山" not in after_leaving, "the chat she left is closed"
    assert after_rejoining is not None and "西湖边爬山" in after_rejoining, "and open again once she is back"


async def test_who_marks_a_member_who_left_and_the_reply_context_card_too(tmp_path: Path) -> None:
    """A member who left was shown by `/who` (and to the reply model) as a member like any other."""
    left = MembershipChange("test", ("g1",), "alice", T0 + timedelta(minutes=3))
    async with answering(tmp_path) as (app, send, _sent):
        await app.pipeline.handle(make_message(1, sender="alice", text="我下个月搬去杭州"), send)
        await app.pipeline.handle(make_message(2, sender="bob", text="大家好"), send)
        await app.pipeline.handle_inbound(left, send, asyncio.Event())
        gone = await app.pipeline.handle(make_message(4, sender="bob", text="/who name-alice"), send)
        asked = (await app.memory.recent((await chat_ids(app.memory, "g1"))[0], 1))[-1]
        context = await app.memory.context_for_reply(asked.chat_id, asked, "name-alice 最近怎么样")
        await app.pipeline.handle(make_message(5, sender="alice", text="我回来了"), send)
        back = await app.pipeline.handle(make_message(6, sender="bob", text="/who name-alice"), send)
    assert gone.reply is not None and "【name-alice(已退群)】" in gone.reply
    assert "退群" in gone.reply.splitlines()[-1], "with the date"
    assert "【name-alice(已退群)】" in context.text, "the reply model is told so"
    assert back.reply is not None and "【name-alice】" in back.reply and "退群" not in back.reply


async def test_an_english_group_is_answered_in_english_and_a_chinese_one_in_chinese(tmp_path: Path) -> None:
    """Found by the English QA pass: every command answer was a fixed Chinese sentence, so an English
    group asking `/recall touch grass` read 关于「touch grass」我记得. The answers now take the language
    the chat writes in; a Chinese chat writing English names and slang stays Chinese."""
    left = MembershipChange("test", ("en",), "liz", T0 + timedelta(minutes=9))
    english = [
        ("bobby", "y'all can call me Bobby, nobody says Robert"),
        ("liz", "who wants to touch grass this weekend? thinking a hike"),
        ("bobby", "we all need to touch grass tbh"),
    ]
    unlimited = Settings.model_validate({"reply": {"commands_per_member": 0}})  # sam asks seven at once
    async with answering(tmp_path, unlimited) as (app, send, _sent):
        for n, (sender, text) in enumerate(english, start=1):
            await app.pipeline.handle(make_message(n, chat="en", sender=sender, text=text), send)
        await app.pipeline.handle_inbound(left, send, asyncio.Event())
        asked = {
            text: (await app.pipeline.handle(make_message(n, chat="en", sender="sam", text=text), send)).reply
            for n, text in enumerate(
                ("/recall touch grass", "/recall pottery", "/who Bobby", "/who name-liz", "/who nobody",
                 "/what skronk", "/what"),
                start=10,
            )
        }  # fmt: skip
        await app.pipeline.handle(make_message(20, chat="zh", text="周六去西湖边爬山，Tom 也去"), send)
        chinese = await app.pipeline.handle(make_message(21, chat="zh", text="/recall hiking"), send)
    assert asked["/recall touch grass"] is not None
    assert asked["/recall touch grass"].startswith("What I remember about “touch grass”:\n- [")
    assert asked["/recall pottery"] == "I remember nothing about “pottery”."
    who = asked["/who Bobby"]
    assert who is not None and who.startswith("Bobby — also: ") and "calls themselves “Bobby”" in who
    assert who.endswith("2 messages · last seen 2026-03-01")
    gone = asked["/who name-liz"]
    assert gone is not None and gone.startswith("name-liz (left)") and gone.endswith("· left 2026-03-01")
    assert asked["/who nobody"] == "I don't know “nobody”."
    assert asked["/what skronk"] == "I don't know what “skronk” means yet."
    assert asked["/what"] == "Usage: /recall <words> · /who <name> · /what <term>"
    assert chinese.reply is not None and chinese.reply.startswith("关于「hiking」我什么也没记住")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ({"disabled_chats": ["g1"]}, "chat disabled"),
        ({"disabled_chats": ["test:g1"]}, "chat disabled"),
        ({"enabled": False}, "disabled"),
    ],
)
async def test_commands_are_not_answered_where_the_bot_never_answers(
    tmp_path: Path, reply: dict[str, Any], reason: str
) -> None:
    settings = Settings.model_validate({"reply": reply, "recall": {"scope": "global"}})
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))
    sent: list[str] = []

    async def send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
        sent.append(text)
        return make_message(100 + len(sent), chat=_chat, sender="bot", text=text, is_bot=True)

    try:
        await app.pipeline.handle(make_message(1, chat="g2", text="周六去西湖边爬山"), send)
        outcomes = [
            await app.pipeline.handle(make_message(n, chat="g1", sender="bob", text=text), send)
            for n, text in enumerate(("/recall 西湖", "/who u1", "/what 西湖"), start=2)
        ]
    finally:
        await app.close()
    assert sent == [] and all(o.recorded and o.reply is None and o.reason == reason for o in outcomes)


async def test_a_long_command_argument_leaves_room_for_the_answer(tmp_path: Path) -> None:
    """Found by the third QA pass: `/recall` echoed the whole question ahead of what it recalled, and
    `/who`, `/what` the whole name or term, so a pasted paragraph filled the answer's
    `[reply] max_chars` and the recalled messages were cut off; the echo is now bounded."""
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", ManualClock(T0))
    sent: list[str] = []

    async def send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
        sent.append(text)
        return make_message(100 + len(sent), sender="bot", text=text, is_bot=True)

    pasted = "西湖 " + "爬山" * 1500
    try:
        await app.pipeline.handle(make_message(1, text="周六去西湖边爬山"), send)
        recalled = await app.pipeline.handle(make_message(2, text=f"/recall {pasted}"), send)
        who = await app.pipeline.handle(make_message(3, text=f"/who {pasted}"), send)
        what = await app.pipeline.handle(make_message(4, text=f"/what {pasted}"), send)
    finally:
        await app.close()
    assert recalled.reply is not None and "周六去西湖边爬山" in recalled.reply
    assert recalled.reply.startswith("关于「西湖 爬山") and len(recalled.reply) < 200
    for answer in (who, what):
        assert answer.reply is not None and len(answer.reply) < 100 and answer.reply.endswith("。")


async def test_a_remembered_line_break_cannot_pass_for_another_item_of_the_answer(tmp_path: Path) -> None:
    """Found by the ninth QA pass: /recall listed a remembered message with its line breaks as they
    were, so a member's message holding "\n- [time] 群主: …" showed in the bot's answer as an item
    recalled from 群主; its lines now continue the item, indented."""
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", ManualClock(T0))
    sent: list[str] = []

    async def send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
        sent.append(text)
        return make_message(100 + len(sent), sender="bot", text=text, is_bot=True)

    forged = "西湖爬山好啊\n- [2026-03-01 20:00] 群主: 爬山取消，每人交 50 元"
    try:
        await app.pipeline.handle(make_message(1, text="周六去西湖边爬山"), send)
        await app.pipeline.handle(make_message(2, sender="u2", text=forged), send)
        recalled = await app.pipeline.handle(make_message(3, text="/recall 西湖 爬山"), send)
    finally:
        await app.close()
    assert recalled.reply is not None and "爬山好啊\n  - [2026-03-01 20:00] 群主: 爬山取消" in recalled.reply
    items = [line.split("] ", 1)[1] for line in recalled.reply.splitlines() if line.startswith("- ")]
    assert sorted(items) == ["name-u1: 周六去西湖边爬山", "name-u2: 西湖爬山好啊"]
