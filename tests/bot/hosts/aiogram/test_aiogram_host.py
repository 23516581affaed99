"""Qunyi inside an aiogram bot (bot.hosts.aiogram): a Dispatcher with handlers of its own, its Bot on
the loopback fake Bot API, records what the bot receives and sends as Qunyi's own Telegram adapter
would, and answers through that Bot."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiogram", reason="the telegram extra is not installed")

from aiogram import Bot, Dispatcher, Router
from aiogram.client.default import DefaultBotProperties
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.filters import Command
from aiogram.methods import SendMessage
from aiogram.types import Message

from bot.hosts.aiogram import AiogramQunyi
from bot.pid_file import PID_FILE
from bot.plugin import QunyiStopped
from memory.models import ChatMember
from memory.persons.store import person_ids_for
from memory.types import ChatMessage, InboundEvent
from tests.adapters.host import stored, watch_feeds
from tests.adapters.telegram.bot_api import (
    ADMIN,
    GROUP,
    SUPERGROUP,
    TOKEN,
    UPDATES,
    FakeBotAPI,
    chat_member_update,
    fed,
    update_in,
)
from tests.waiting import WAIT, eventually

# a day of a group: the fixture's messages, a join, a photo answering the bot; an edit, a member
# leaving (a service message) and banned (chat_member), then the group upgraded to a supergroup
DAY = [
    *UPDATES,
    {
        "update_id": 1005,
        "edited_message": UPDATES[0]["message"] | {"text": "周日八点", "edit_date": 1772366900},
    },
    update_in(GROUP, 1006, 6, text="周六见"),
    update_in(GROUP, 1007, 7, left_chat_member={"id": 444, "is_bot": False, "first_name": "Dave"}),
    chat_member_update(1008, "member", "kicked"),
    update_in(GROUP, 1009, 9, migrate_to_chat_id=SUPERGROUP["id"]),
    update_in(SUPERGROUP, 1010, 1, migrate_from_chat_id=GROUP["id"]),
]


Middleware = Callable[[Callable[[Any, dict[str, Any]], Awaitable[Any]], Any, dict[str, Any]], Awaitable[Any]]


class Host:
    """An aiogram bot: its Bot on the fake Bot API (HTML as its default parse mode, as many bots have
    it), a Dispatcher with a router of its own (`/hello` answered `你好`, `/forget` deleting the message
    it answers, `/hi` answered by returning the method, every other message noted in `seen`), and Qunyi
    attached; `fed` are the events Qunyi
    was fed."""

    def __init__(
        self,
        base: str,
        data_dir: Path,
        fed: list[InboundEvent],
        middleware: Middleware | None = None,
        config: Path | None = None,
    ) -> None:
        session = AiohttpSession(api=TelegramAPIServer.from_base(base))
        self.bot = Bot(TOKEN, session=session, default=DefaultBotProperties(parse_mode="HTML"))
        self.dp = Dispatcher()
        self.seen: list[int] = []
        self.dp.include_router(self._handlers())
        if middleware is not None:  # the bot's own, registered before Qunyi is attached
            self.dp.update.outer_middleware(middleware)
        self.qunyi = AiogramQunyi(self.bot, config=config, data_dir=data_dir)
        self.qunyi.attach(self.dp)
        self.data_dir = data_dir
        self.fed = fed

    def _handlers(self) -> Router:
        router = Router()

        @router.message(Command("hello"))
        async def hello(message: Message) -> None:
            await message.answer("你好")

        @router.message(Command("hi"))
        async def hi(message: Message) -> SendMessage:  # the answer returned, for aiogram to make
            return message.answer("嗨，周六见")

        @router.message(Command("forget"))
        async def forget(message: Message) -> None:
            assert message.reply_to_message is not None
            await message.reply_to_message.delete()

        @router.message()
        async def everything(message: Message) -> None:  # takes every message: none goes further
            self.seen.append(message.message_id)

        return router

    async def receive(self, *updates: dict[str, Any]) -> None:
        """Hand the Dispatcher `updates` as Telegram posts them (to a webhook; polled, the same)."""
        for update in updates:
            await self.dp.feed_raw_update(self.bot, update)

    async def start(self) -> None:
        await self.dp.emit_startup(bot=self.bot)

    async def stop(self) -> None:
        await self.dp.emit_shutdown(bot=self.bot)


@pytest.fixture
async def host(
    api: tuple[FakeBotAPI, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Host]:
    """The bot started (Qunyi with it) on the fake Bot API with no updates waiting; stopped afterwards."""
    fake, base = api
    fake.updates = []
    bot = Host(base, tmp_path / "data", watch_feeds(monkeypatch))
    await bot.start()
    try:
        yield bot
    finally:
        await bot.stop()
        await bot.bot.session.close()


def sent(fake: FakeBotAPI) -> list[dict[str, Any]]:
    """The sendMessage calls the fake Bot API was asked."""
    return [params for method, params in fake.calls if method == "sendMessage"]


async def test_updates_are_fed_as_qunyis_own_telegram_adapter_reads_them(
    host: Host, api: tuple[FakeBotAPI, str]
) -> None:
    """Every message, edit, chat_member update and supergroup move is fed the same, to the field, as
    Qunyi's Telegram adapter reads it, and the bot's own handlers still see every message."""
    _, base = api
    await host.receive(*DAY)
    expected = await fed(base, *DAY)
    assert host.fed == expected
    kinds = [type(event).__name__ for event in expected]
    assert kinds.count("MembershipChange") == 3 and kinds.count("ChatMoved") == 2
    edit = expected[4]
    assert isinstance(edit, ChatMessage) and edit.edited and edit.text == "周日八点"
    assert host.seen == [40, 41, 42, 43, 6, 7, 9, 1], "no message was kept from the bot's handlers"


async def test_a_recall_is_answered_through_the_bot_as_a_reply_and_recorded_once_as_its_own(
    host: Host, api: tuple[FakeBotAPI, str]
) -> None:
    fake, _ = api
    await host.receive(update_in(GROUP, 1, 1, text="周六去西湖边骑车吧"))
    await host.receive(update_in(GROUP, 2, 2, text="/recall 西湖"))
    await eventually(lambda: bool(sent(fake)), "the answer sent")
    await host.stop()  # Qunyi lets the answer under way finish first
    [answer] = sent(fake)
    assert answer["chat_id"] == str(GROUP["id"]) and answer["reply_parameters"]["message_id"] == 2
    assert "周六去西湖边骑车吧" in answer["text"]
    assert (await stored(host.data_dir))[2:] == [("501", answer["text"], True)]
    # recorded from what the send returned, not a second time from the Bot's API call
    assert not any(isinstance(event, ChatMessage) and event.is_bot for event in host.fed)


async def test_a_member_past_the_command_limit_is_told_once_and_every_message_is_recorded(
    api: tuple[FakeBotAPI, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seven /recall in a row from Alice: five answers, then one note saying when to ask again, then
    nothing (`[reply] commands_per_member`, 5 by default), while Bob is answered; all are recorded."""
    fake, base = api
    fake.updates = []
    config = tmp_path / "config.toml"
    config.write_text("[reply]\ncommands_window_seconds = 3600\n", encoding="utf-8")
    host = Host(base, tmp_path / "data", watch_feeds(monkeypatch), config=config)
    await host.start()
    try:
        await host.receive(update_in(GROUP, 1, 1, text="周六去西湖边骑车吧"))
        for n in range(2, 9):
            await host.receive(update_in(GROUP, n, n, text="/recall 西湖"))
        # Bob is answered after Alice's last command was handled (a chat's answers go in order)
        await host.receive(update_in(GROUP, 9, 9, text="/recall 西湖", **{"from": ADMIN}))
        await eventually(lambda: len(sent(fake)) == 7, "Bob's answer sent")
    finally:
        await host.stop()
        await host.bot.session.close()
    answers = sent(fake)
    assert [answer["reply_parameters"]["message_id"] for answer in answers] == [2, 3, 4, 5, 6, 7, 9]
    assert all("周六去西湖边骑车吧" in answer["text"] for answer in answers[:5])
    assert answers[5]["text"].startswith("问得有点频繁了，") and answers[5]["text"].endswith("分钟后再问吧。")
    members = [text for _id, text, is_bot in await stored(host.data_dir) if not is_bot]
    assert members == ["周六去西湖边骑车吧"] + ["/recall 西湖"] * 8


async def test_an_answer_is_plain_text_whatever_parse_mode_the_bot_defaults_to(
    host: Host, api: tuple[FakeBotAPI, str]
) -> None:
    """A recalled message holding `<` or `&` was refused by Telegram (or lost its markup) when the Bot's
    default parse mode applied to Qunyi's answer, which is plain text."""
    fake, _ = api
    await host.receive(update_in(GROUP, 1, 1, text="<b>周六</b> 西湖 & 灵隐"))
    await host.receive(update_in(GROUP, 2, 2, text="/recall 西湖"))
    await eventually(lambda: bool(sent(fake)), "the answer sent")
    [answer] = sent(fake)
    assert "<b>周六</b> 西湖 & 灵隐" in answer["text"]
    assert "parse_mode" not in answer


async def test_what_the_bots_handlers_send_edit_and_delete_is_recorded(
    host: Host, api: tuple[FakeBotAPI, str]
) -> None:
    """Telegram never sends a bot its own messages: what the bot's handlers send through the Bot is
    recorded from the API call's result, as the bot's; an edit replaces it, a deletion forgets."""
    await host.receive(update_in(GROUP, 1, 1, text="周六去西湖"))
    await host.receive(update_in(GROUP, 2, 2, text="/hello"))
    await host.bot.edit_message_text("你好，周六见", chat_id=GROUP["id"], message_id=501)
    replied = {"message_id": 1, "chat": GROUP, "date": 1772366401, "text": "周六去西湖"}
    await host.receive(update_in(GROUP, 3, 3, text="/forget", reply_to_message=replied))
    await host.bot.delete_messages(GROUP["id"], [2, 3])
    await host.stop()
    assert await stored(host.data_dir) == [("501", "你好，周六见", True)]
    mine = [e for e in host.fed if isinstance(e, ChatMessage) and e.is_bot]
    assert [(e.message_id, e.edited, e.sender_id) for e in mine] == [
        ("501", False, "999"),
        ("501", True, "999"),
    ]


async def test_an_answer_a_handler_returns_to_a_webhook_is_sent_and_recorded_as_the_bots(
    host: Host, api: tuple[FakeBotAPI, str]
) -> None:
    """A webhook answered when its update is handled (aiogram's `handle_in_background=False`) handed the
    method a handler returned to Telegram in the HTTP answer: sent, but with no API call whose result
    told Qunyi of it. Qunyi now makes that call itself, and the webhook's answer is empty."""
    fake, _ = api
    answer = await host.dp.feed_webhook_update(host.bot, update_in(GROUP, 1, 1, text="/hi"))
    assert answer is None
    [call] = sent(fake)
    assert call["text"] == "嗨，周六见" and call["chat_id"] == str(GROUP["id"])
    await host.stop()
    assert await stored(host.data_dir) == [("1", "/hi", False), ("501", "嗨，周六见", True)]


CHANNEL = {"id": -1001122334455, "type": "channel", "title": "周末开黑频道"}


async def test_a_channels_post_is_recorded_in_its_discussion_group_and_business_messages_are_not(
    host: Host,
) -> None:
    """A channel's posts come to its discussion group as automatic forwards, which are recorded there as
    the channel's (forwards), the comments answering them; the `channel_post` update itself (sent to a
    bot that is an admin of the channel) and business messages (a business account's own private chats,
    read on its owner's behalf) are not: Qunyi is the memory of the group's talk."""
    post = {"message_id": 7, "date": 1772366500, "chat": CHANNEL, "text": "本周六晚八点开黑"}
    forwarded = update_in(
        SUPERGROUP,
        1,
        70,
        text="本周六晚八点开黑",
        sender_chat=CHANNEL,
        is_automatic_forward=True,
        forward_origin={"type": "channel", "chat": CHANNEL, "message_id": 7, "date": 1772366500},
    )
    forwarded["message"]["from"] = {"id": 777000, "is_bot": False, "first_name": "Telegram"}
    comment = update_in(SUPERGROUP, 2, 71, text="我来", reply_to_message=forwarded["message"])
    business = {
        "update_id": 3,
        "business_message": update_in(GROUP, 3, 8, text="请问周六营业吗")["message"]
        | {"chat": {"id": 111, "type": "private", "first_name": "Alice"}, "business_connection_id": "b1"},
    }
    await host.receive({"update_id": 4, "channel_post": post}, forwarded, comment, business)
    [shared, answered] = [e for e in host.fed if isinstance(e, ChatMessage)]
    assert (shared.chat_id, shared.sender_id, shared.sender_name) == (
        str(SUPERGROUP["id"]),
        str(CHANNEL["id"]),
        "周末开黑频道",
    )
    assert shared.forwarded and shared.text == "本周六晚八点开黑"
    assert answered.reply_to == "70"
    await host.stop()
    assert await stored(host.data_dir) == [("70", "本周六晚八点开黑", False), ("71", "我来", False)]


async def test_a_member_leaving_is_marked_gone(host: Host) -> None:
    await host.receive(update_in(GROUP, 1, 1))  # Alice writes
    await host.receive(chat_member_update(2, "member", "left"))
    chat = await host.qunyi.plugin.memory.chat("telegram", str(GROUP["id"]))
    assert chat is not None
    async with host.qunyi.plugin.app.db.read() as session:
        alice = (await person_ids_for(session, "telegram", ["111"]))["111"]
        member = await session.get(ChatMember, (chat.id, alice))
    assert member is not None and member.left_at == 1772366402


async def test_a_failing_send_loses_nothing(
    host: Host, api: tuple[FakeBotAPI, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    fake, _ = api
    fake.refusals = [{"error_code": 403, "description": "Forbidden: bot was kicked from the group chat"}]
    await host.receive(update_in(GROUP, 1, 1, text="周六去西湖"))
    await host.receive(update_in(GROUP, 2, 2, text="/recall 西湖"))
    await eventually(lambda: "not sent" in caplog.text, "the failed send logged")
    assert "bot was kicked" in caplog.text
    await host.stop()
    assert await stored(host.data_dir) == [("1", "周六去西湖", False), ("2", "/recall 西湖", False)]


async def test_polling_starts_and_stops_qunyi_and_asks_for_the_updates_it_reads(
    api: tuple[FakeBotAPI, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Dispatcher's start opens the data directory and its stop frees it; the updates Qunyi reads
    are asked for although no handler of the bot takes edits or chat_member updates."""
    fake, base = api
    fake.updates = [UPDATES[0]]
    host = Host(base, tmp_path / "data", watch_feeds(monkeypatch))
    assert "chat_member" not in host.dp.resolve_used_update_types()
    polling = asyncio.ensure_future(
        host.dp.start_polling(
            host.bot,
            polling_timeout=0,
            handle_signals=False,
            allowed_updates=host.qunyi.allowed_updates(host.dp),
        )
    )
    try:
        await eventually(lambda: bool(host.fed), "the polled message fed")
        assert (host.data_dir / PID_FILE).exists()
    finally:
        await host.dp.stop_polling()
        await asyncio.wait_for(polling, WAIT)
    assert not (host.data_dir / PID_FILE).exists()
    with pytest.raises(QunyiStopped):
        host.qunyi.plugin.memory  # noqa: B018
    assert await stored(host.data_dir) == [("40", "🎮周六晚上八点打本？", False)]
    polls = [params for method, params in fake.calls if method == "getUpdates"]
    assert {"message", "edited_message", "chat_member"} <= set(polls[0]["allowed_updates"])


async def test_the_updates_of_a_chat_are_recorded_in_the_order_they_came_though_one_is_held_up(
    api: tuple[FakeBotAPI, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polled with aiogram's default `handle_as_tasks`, each update runs in a task of its own: when an
    outer middleware of the bot's (registered before Qunyi's) held the first update back, the second
    was recorded first. Qunyi now reads each update before the bot's middlewares, and a chat's updates
    in the order they came; the second update's handlers wait for the first one's recording only."""
    fake, base = api
    fake.updates = [update_in(GROUP, 1, 1, text="先说的"), update_in(GROUP, 2, 2, text="后说的")]
    release = asyncio.Event()
    passed: list[int] = []

    async def holding_the_first(
        handler: Callable[[Any, dict[str, Any]], Awaitable[Any]], update: Any, data: dict[str, Any]
    ) -> Any:
        if update.update_id == 1:
            await release.wait()
        passed.append(update.update_id)
        return await handler(update, data)

    host = Host(base, tmp_path / "data", watch_feeds(monkeypatch), holding_the_first)
    polling = asyncio.ensure_future(host.dp.start_polling(host.bot, polling_timeout=0, handle_signals=False))
    try:
        await eventually(lambda: passed == [2], "the second update past the bot's middleware")
        release.set()
        await eventually(lambda: sorted(host.seen) == [1, 2], "both updates handled")
    finally:
        await host.dp.stop_polling()
        await asyncio.wait_for(polling, WAIT)
        await host.bot.session.close()
    assert await stored(host.data_dir) == [("1", "先说的", False), ("2", "后说的", False)]


async def test_the_updates_of_another_bot_of_the_dispatcher_are_not_fed(
    host: Host, api: tuple[FakeBotAPI, str]
) -> None:
    """A Dispatcher may poll several bots; Qunyi is the memory of its own, whose id its messages hold."""
    _, base = api
    other = Bot("777:other-token", session=AiohttpSession(api=TelegramAPIServer.from_base(base)))
    try:
        await host.dp.feed_raw_update(other, UPDATES[0])
    finally:
        await other.session.close()
    await host.receive(UPDATES[1])
    assert [e.message_id for e in host.fed if isinstance(e, ChatMessage)] == ["41"]
    assert host.seen == [40, 41], "the other bot's update still reached the handlers"


async def test_context_gives_the_bot_the_memory_for_its_own_reply_prompt(host: Host) -> None:
    await host.receive(update_in(GROUP, 1, 1, text="我一般周末去西湖边骑车"))
    question = Message.model_validate(
        update_in(GROUP, 2, 2, text="@qunyi_bot Alice 周末一般干嘛？")["message"], context={"bot": host.bot}
    )
    context = await host.qunyi.context(question)
    assert "周末去西湖边骑车" in context.text and "<memory" in context.text
