"""The Telegram adapter against a loopback fake Bot API server (getMe, getUpdates, sendMessage)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

pytest.importorskip("aiogram", reason="the telegram extra is not installed")

from adapters.base import SendError
from adapters.listening import CannotListen
from adapters.telegram import TelegramAdapter, TelegramConfig
from bot.app import build_app
from bot.chat_moves import follow_chat_move
from bot.config import ConfigStore, Settings
from bot.inbound import inbound_handler
from bot.responding import Responses
from memory.clock import ManualClock
from memory.models import ChatMember
from memory.persons.store import person_ids_for
from memory.types import ChatMessage, ChatMoved, InboundEvent, MembershipChange
from tests.adapters.held import HeldHandler, SlowToCancel, stop_waits
from tests.adapters.telegram.bot_api import (
    ALICE,
    BOT_USER,
    GROUP,
    SUPERGROUP,
    TOKEN,
    UPDATES,
    FakeBotAPI,
    chat_member_update,
    fed,
    update_in,
)
from tests.bot.reply.test_reply_answers import llm_settings
from tests.conftest import T0
from tests.fakes.openai_server import Answer, FakeOpenAI, Hold
from tests.waiting import WAIT, eventually


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


async def test_polls_updates_and_replies(api: tuple[FakeBotAPI, str]) -> None:
    fake, base = api
    inbox: asyncio.Queue[InboundEvent] = asyncio.Queue()
    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0))
    await adapter.start(inbox.put)
    try:
        events = [await asyncio.wait_for(inbox.get(), WAIT) for _ in range(4)]
        dave = MembershipChange("telegram", ("-1001987654321",), "444", at(1772366580), joined=True)
        assert events[2] == dave, "Dave's join, told by a service message"
        received = [m for m in events if isinstance(m, ChatMessage)]
        assert [m.message_id for m in received] == ["40", "41", "43"]
        asked = received[1]
        assert asked.to_bot and asked.reply_to == "40"
        sent = await adapter.send_text(asked.chat_id, "记下了：周六 20:00", reply_to=asked.message_id)
        method, params = fake.calls[-1]
        assert method == "sendMessage"
        assert params["chat_id"] == "-1001987654321" and params["text"] == "记下了：周六 20:00"
        assert params["reply_parameters"]["message_id"] == 41
        assert sent.is_bot and sent.message_id == "501" and sent.sender_id == "999"
        assert sent.text == "记下了：周六 20:00"
        with pytest.raises(SendError, match="empty"):
            await adapter.send_text(asked.chat_id, "")
        long_reply = "好" * 3000 + "👍🏽" * 1000  # 5000 code points, 7000 UTF-16 code units
        sent = await adapter.send_text(asked.chat_id, long_reply)
        assert sent.text.endswith("…") and long_reply.startswith(sent.text[:-1])
        assert 4000 < len(sent.text.encode("utf-16-le")) // 2 <= 4096
        assert not sent.text[:-1].endswith("👍"), "no skin-tone modifier is cut off its emoji"
    finally:
        await adapter.stop()
    assert fake.calls[0][0] == "getMe"


async def test_feed_update_without_polling(api: tuple[FakeBotAPI, str]) -> None:
    fake, base = api
    fake.updates = []
    (msg,) = await fed(base, UPDATES[3])
    assert msg.message_id == "43" and msg.to_bot


async def test_a_message_the_neutral_form_refuses_is_skipped_with_a_warning(
    api: tuple[FakeBotAPI, str], caplog: pytest.LogCaptureFixture
) -> None:
    """A date before 1970 passed aiogram's validation; ChatMessage refused it with an InvalidMessage
    the adapter did not catch, so the update failed with a traceback."""
    fake, base = api
    fake.updates = []
    dated_1969 = UPDATES[0] | {"message": UPDATES[0]["message"] | {"date": -1}}
    join_1969 = UPDATES[2] | {"message": UPDATES[2]["message"] | {"date": -1}}  # a service message
    assert [m.message_id for m in await fed(base, dated_1969, join_1969, UPDATES[3])] == ["43"]
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(skipped) == 2 and all("out of range" in line for line in skipped)


async def test_an_edited_message_is_polled_and_delivered_marked_edited_with_its_first_date(
    api: tuple[FakeBotAPI, str],
) -> None:
    fake, base = api
    original = UPDATES[0]["message"]
    edited = original | {"text": "🎮周日晚上八点打本？", "edit_date": original["date"] + 60}
    fake.updates = [{"update_id": 2001, "edited_message": edited}]
    inbox: asyncio.Queue[ChatMessage] = asyncio.Queue()
    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0))
    await adapter.start(inbox.put)
    try:
        msg = await asyncio.wait_for(inbox.get(), WAIT)
        assert msg.edited and msg.message_id == "40" and msg.text == "🎮周日晚上八点打本？"
        assert msg.time.timestamp() == original["date"]
    finally:
        await adapter.stop()
    polls = [params for method, params in fake.calls if method == "getUpdates"]
    assert {"edited_message", "chat_member"} <= set(polls[0]["allowed_updates"])


def test_webhook_mode_needs_a_url() -> None:
    with pytest.raises(ValueError, match="webhook_url"):
        TelegramConfig(token=TOKEN, mode="webhook")


@pytest.mark.filterwarnings("ignore:Detected unknown update type")  # aiogram on the bare id
async def test_an_update_that_cannot_be_read_is_skipped_and_polling_goes_on(
    api: tuple[FakeBotAPI, str],
) -> None:
    fake, base = api
    broken = {
        "update_id": 1002,
        "message": {"message_id": 41, "chat": UPDATES[1]["message"]["chat"]},
    }  # no date
    fake.updates = [UPDATES[0], broken, UPDATES[3]]
    inbox: asyncio.Queue[ChatMessage] = asyncio.Queue()
    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0))
    await adapter.start(inbox.put)
    try:
        received = [await asyncio.wait_for(inbox.get(), WAIT) for _ in range(2)]
        assert [m.message_id for m in received] == ["40", "43"]
        await eventually(
            lambda: any(m == "getUpdates" and p.get("offset") == "1005" for m, p in fake.calls),
            "the offset moved past every update of the batch",
        )
    finally:
        await adapter.stop()


def test_unreadable_updates_keep_only_their_id() -> None:
    from adapters.telegram.session import readable_updates

    answer = {"ok": True, "result": [UPDATES[0], {"update_id": 7, "message": {"text": 1}}, "junk", {"x": 1}]}
    kept = json.loads(readable_updates(json.dumps(answer)))
    assert kept == {"ok": True, "result": [UPDATES[0], {"update_id": 7}]}
    assert readable_updates("{not json") == "{not json"


@contextlib.asynccontextmanager
async def quiet_adapter(api: tuple[FakeBotAPI, str]) -> AsyncIterator[TelegramAdapter]:
    """A started polling adapter with no updates waiting, stopped afterwards."""
    fake, base = api
    fake.updates = []
    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0))
    await adapter.start(lambda _m: asyncio.sleep(0))
    try:
        yield adapter
    finally:
        await adapter.stop()


async def test_a_reply_met_by_flood_control_is_sent_after_the_wait_telegram_asks_for(
    api: tuple[FakeBotAPI, str],
) -> None:
    """Telegram answers 429 with `retry_after` when a chat gets messages too fast (about 20 a minute in a
    group); the reply used to be refused and lost."""
    fake, _base = api
    async with quiet_adapter(api) as adapter:
        fake.refusals = [
            {
                "error_code": 429,
                "description": "Too Many Requests: retry after 1",
                "parameters": {"retry_after": 1},
            }
        ]
        sent = await adapter.send_text("-1001987654321", "记下了", reply_to="41")
        assert sent.text == "记下了" and sent.message_id == "501"
        tries = [p for m, p in fake.calls if m == "sendMessage"]
        assert len(tries) == 2 and tries[1]["reply_parameters"]["message_id"] == 41
        fake.refusals = [
            {"error_code": 429, "description": "Too Many Requests", "parameters": {"retry_after": 3600}}
        ]
        with pytest.raises(SendError, match="Flood control"):  # longer than a reply is worth waiting
            await adapter.send_text("-1001987654321", "记下了")


async def test_a_reply_to_a_group_upgraded_to_a_supergroup_goes_to_the_supergroup(
    api: tuple[FakeBotAPI, str], caplog: pytest.LogCaptureFixture
) -> None:
    """After the upgrade Telegram refuses the old id (400 with migrate_to_chat_id); the reply was lost."""
    fake, _base = api
    async with quiet_adapter(api) as adapter:
        fake.refusals = [
            {
                "error_code": 400,
                "description": "Bad Request: group chat was upgraded to a supergroup chat",
                "parameters": {"migrate_to_chat_id": -1001987654321},
            }
        ]
        with caplog.at_level(logging.WARNING):
            sent = await adapter.send_text("-4455", "记下了", reply_to="41")
        assert (sent.chat_id, sent.text) == ("-1001987654321", "记下了")
        tries = [p for m, p in fake.calls if m == "sendMessage"]
        assert [t["chat_id"] for t in tries] == ["-4455", "-1001987654321"]
        assert "reply_parameters" not in tries[1], "the old group's message ids mean nothing there"
        assert "Telegram group -4455 is now supergroup -1001987654321" in caplog.text


async def test_the_upgrade_of_a_group_is_told_in_the_log(
    api: tuple[FakeBotAPI, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake, base = api
    fake.updates = []
    handled: list[InboundEvent] = []

    async def handle(event: InboundEvent) -> None:
        handled.append(event)

    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0))
    await adapter.start(handle)
    upgrade = {
        "update_id": 7,
        "message": {
            "message_id": 90,
            "date": 1772366700,
            "chat": {"id": -4455, "type": "group", "title": "周末开黑群"},
            "from": {"id": 111, "is_bot": False, "first_name": "小红"},
            "migrate_to_chat_id": -1001987654321,
        },
    }
    try:
        with caplog.at_level(logging.WARNING):
            await adapter.feed_update(upgrade)
        assert handled == [ChatMoved("telegram", "-4455", "-1001987654321")], "and no chat message"
        assert "group -4455 was upgraded to supergroup -1001987654321" in caplog.text
    finally:
        await adapter.stop()


async def test_an_upgrade_to_a_supergroup_moves_the_group_memory_there(
    api: tuple[FakeBotAPI, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """What the bot remembered of the group used to stay with the old chat id, out of the supergroup's
    sight. Telegram tells both chats of the upgrade; the first notice moves the memory, the second
    finds nothing left, and the supergroup's own message 1 is no clash with the group's."""
    fake, base = api
    fake.updates = []
    app = await build_app(
        ConfigStore(Settings(), None), tmp_path / "data", ManualClock(T0), watch_config=False
    )
    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0))

    async def handle(event: InboundEvent) -> None:  # as `qunyi run` routes what adapters deliver
        if isinstance(event, ChatMoved):
            await follow_chat_move(app, event)
        elif isinstance(event, ChatMessage):
            await app.memory.record(event)

    await adapter.start(handle)
    try:
        for n in (1, 2):
            await adapter.feed_update(update_in(GROUP, n, n))
        with caplog.at_level(logging.INFO):
            await adapter.feed_update(update_in(GROUP, 3, 3, migrate_to_chat_id=SUPERGROUP["id"]))
            await adapter.feed_update(update_in(SUPERGROUP, 4, 1, migrate_from_chat_id=GROUP["id"]))
        await adapter.feed_update(update_in(SUPERGROUP, 5, 1))
    finally:
        await adapter.stop()
    try:
        assert "what was remembered moves there" in caplog.text
        assert "merged telegram:-4455 into telegram:-1001987654321: 2 messages" in caplog.text
        assert "nothing is remembered under the old id" in caplog.text
        assert await app.memory.chat("telegram", "-4455") is None
        supergroup = await app.memory.chat("telegram", "-1001987654321")
        assert supergroup is not None
        recent = await app.memory.recent(supergroup.id, 10)
        assert [(m.platform_message_id, m.text) for m in recent] == [
            ("-4455/1", "周六爬山 1"),
            ("-4455/2", "周六爬山 2"),
            ("1", "周六爬山 1"),
        ]
    finally:
        await app.close()


async def test_an_answer_waiting_while_its_group_is_upgraded_goes_to_the_supergroup(
    api: tuple[FakeBotAPI, str], tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """An answer under way when the group was upgraded was worked out in the old chat (gone with the
    move) and sent to the old group id, replying to a message id that means nothing in the supergroup;
    it now goes to the supergroup, with the supergroup's memory, and is recorded there."""
    fake, base = api
    fake.updates = []
    app = await build_app(
        ConfigStore(llm_settings(fake_llm.base_url), None),
        tmp_path / "data",
        ManualClock(T0),
        watch_config=False,
    )
    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0))
    responses = Responses()
    held = Hold(Answer("去宝石山"))
    fake_llm.script(held)
    await adapter.start(inbound_handler(app, adapter, asyncio.Event(), responses))
    try:
        await adapter.feed_update(update_in(GROUP, 1, 1, text="@qunyi_bot 周六去哪爬山？"))
        await asyncio.wait_for(held.reached.wait(), WAIT)  # the answer waits on the model
        await adapter.feed_update(update_in(GROUP, 2, 2, migrate_to_chat_id=SUPERGROUP["id"]))
        assert await app.memory.chat("telegram", "-4455") is None, "the move is made while the answer waits"
        held.release.set()
        await responses.stop()
        supergroup = await app.memory.chat("telegram", "-1001987654321")
        assert supergroup is not None
        recent = await app.memory.recent(supergroup.id, 10)
        assert await app.memory.chat("telegram", "-4455") is None, "the old chat is not made again"
    finally:
        await adapter.stop()
        await app.close()
    tries = [p for m, p in fake.calls if m == "sendMessage"]
    assert [(t["chat_id"], t["text"]) for t in tries] == [("-1001987654321", "去宝石山")]
    assert "reply_parameters" not in tries[0], "the group's message ids mean nothing in the supergroup"
    assert [(m.platform_message_id, m.text) for m in recent] == [
        ("-4455/1", "@qunyi_bot 周六去哪爬山？"),
        ("501", "去宝石山"),
    ]
    prompt = json.dumps(fake_llm.chat_requests[0].body, ensure_ascii=False)
    assert "周六去哪爬山" in prompt


async def test_with_the_upgrade_not_followed_the_memory_stays_with_the_group(
    api: tuple[FakeBotAPI, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake, base = api
    fake.updates = []
    moves: list[InboundEvent] = []
    config = TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0, follow_supergroup_upgrade=False)
    adapter = TelegramAdapter(config)

    async def handle(event: InboundEvent) -> None:
        moves.append(event)

    await adapter.start(handle)
    try:
        with caplog.at_level(logging.WARNING):
            await adapter.feed_update(update_in(GROUP, 3, 3, migrate_to_chat_id=SUPERGROUP["id"]))
    finally:
        await adapter.stop()
    assert moves == []
    assert "what was remembered stays with chat telegram:-4455" in caplog.text


async def test_stop_lets_the_update_being_handled_finish_and_leaves_the_next_one_unconfirmed(
    api: tuple[FakeBotAPI, str],
) -> None:
    """Stopping used to cancel the update being handled: its message was recorded but the reply never
    went out, and at the next start Telegram's redelivery was a duplicate, so it was never answered."""
    fake, base = api
    fake.updates = [UPDATES[0], UPDATES[1]]
    held = HeldHandler()
    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0))
    await adapter.start(held)
    await asyncio.wait_for(held.started.wait(), WAIT)
    stopping = asyncio.ensure_future(adapter.stop())
    await stop_waits(stopping, adapter._in_flight.draining)
    held.release.set()
    await asyncio.wait_for(stopping, WAIT)
    assert held.message_ids() == ["40"], "the first finished, the second was not begun"
    offsets = [p.get("offset") for m, p in fake.calls if m == "getUpdates"]
    assert "1003" not in offsets, "update 1002 was not confirmed: Telegram sends it again at the next start"


async def test_stop_keeps_to_its_budget_when_the_update_in_hand_is_slow_to_give_up(
    api: tuple[FakeBotAPI, str],
) -> None:
    """An update still being handled when `within` runs out is cancelled, and the stop does not wait
    for it to give up (it used to wait for polling to end, without a bound); it is not confirmed."""
    fake, base = api
    fake.updates = [UPDATES[0], UPDATES[1]]
    slow = SlowToCancel()
    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=30))
    await adapter.start(slow)
    await asyncio.wait_for(slow.started.wait(), WAIT)
    polling = adapter._polling
    assert polling is not None
    stopping = asyncio.ensure_future(adapter.stop(within=0))  # the budget is used up at once
    done, _ = await asyncio.wait({stopping}, timeout=WAIT)  # a guard against a stop that hangs
    assert stopping in done and slow.cancelled.is_set(), "stopped while the handler is still giving up"
    slow.release.set()
    await asyncio.wait({polling}, timeout=WAIT)
    assert polling.done(), "polling ended with the handler"
    offsets = [p.get("offset") for m, p in fake.calls if m == "getUpdates"]
    assert "1002" not in offsets, "update 1001 was not confirmed: Telegram sends it again at the next start"


async def webhook_adapter(
    base: str, handler: Any, secret: str | None = "s3cret"
) -> tuple[TelegramAdapter, str]:
    """A started adapter in webhook mode and the local address Telegram would post to."""
    config = TelegramConfig(
        token=TOKEN,
        api_base=base,
        mode="webhook",
        webhook_url="https://bot.example.com/telegram/webhook",
        webhook_port=0,
        webhook_secret=secret,
    )
    adapter = TelegramAdapter(config)
    await adapter.start(handler)
    host, port = adapter._runner.addresses[0][:2]
    return adapter, f"http://{host}:{port}{config.webhook_path}"


async def test_a_taken_webhook_port_names_the_address_and_the_setting(
    api: tuple[FakeBotAPI, str], taken_port: int
) -> None:
    """It said "Address already in use" without naming the server or what to change."""
    _, base = api
    hook = "https://bot.example.com/hook"
    config = TelegramConfig(
        token=TOKEN, api_base=base, mode="webhook", webhook_url=hook, webhook_port=taken_port
    )
    adapter = TelegramAdapter(config)
    try:
        with pytest.raises(CannotListen) as refused:
            await adapter.start(HeldHandler())
    finally:
        await adapter.stop()
    assert str(refused.value) == (
        f"cannot listen on 127.0.0.1:{taken_port} (Address already in use); another program holds that "
        "port: change [adapters.telegram] webhook_port"
    )


async def post(url: str, body: str | bytes, secret: str = "s3cret") -> int:
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret, "Content-Type": "application/json"}
    async with aiohttp.ClientSession() as session, session.post(url, data=body, headers=headers) as answer:
        return answer.status


async def test_webhook_answers_bad_posts_clearly_and_skips_an_update_it_cannot_read(
    api: tuple[FakeBotAPI, str],
) -> None:
    fake, base = api
    handled: list[ChatMessage] = []

    async def handler(message: ChatMessage) -> None:
        handled.append(message)

    adapter, url = await webhook_adapter(base, handler)
    try:
        assert await post(url, json.dumps(UPDATES[0]), secret="wrong") == 401
        assert await post(url, b"{not json") == 400
        assert await post(url, b"\xff\xfe") == 400
        unreadable = {"update_id": 1002, "message": {"message_id": 41, "chat": UPDATES[1]["message"]["chat"]}}
        assert await post(url, json.dumps(unreadable)) == 200, "skipped, not posted again for ever"
        assert await post(url, json.dumps(UPDATES[0])) == 200
        assert [m.message_id for m in handled] == ["40"], "handled before Telegram was answered"
        webhook = [p for m, p in fake.calls if m == "setWebhook"]
        assert webhook[0]["max_connections"] == "1", "one update at a time, in order, as polling"
    finally:
        await adapter.stop()


async def test_a_webhook_without_a_configured_secret_still_checks_one(api: tuple[FakeBotAPI, str]) -> None:
    """Without webhook_secret anyone who learnt the path could post made-up updates into memory."""
    fake, base = api
    handled: list[ChatMessage] = []

    async def handler(message: ChatMessage) -> None:
        handled.append(message)

    adapter, url = await webhook_adapter(base, handler, secret=None)
    try:
        [asked] = [p for m, p in fake.calls if m == "setWebhook"]
        made = asked["secret_token"]
        assert len(made) >= 32
        assert await post(url, json.dumps(UPDATES[0]), secret="") == 401
        assert handled == []
        assert await post(url, json.dumps(UPDATES[0]), secret=made) == 200
        assert [m.message_id for m in handled] == ["40"]
    finally:
        await adapter.stop()


async def test_webhook_update_posted_while_stopping_is_refused_so_telegram_posts_it_again(
    api: tuple[FakeBotAPI, str],
) -> None:
    """Updates were answered 200 at once and handled in the background, so one posted while the bot was
    stopping was acknowledged and then never handled: Telegram does not post an acknowledged update again."""
    _fake, base = api
    held = HeldHandler()
    adapter, url = await webhook_adapter(base, held)
    first = asyncio.ensure_future(post(url, json.dumps(UPDATES[0])))
    await asyncio.wait_for(held.started.wait(), WAIT)
    stopping = asyncio.ensure_future(adapter.stop())
    await stop_waits(stopping, adapter._in_flight.draining)
    assert await post(url, json.dumps(UPDATES[1])) == 503
    held.release.set()
    await asyncio.wait_for(stopping, WAIT)
    assert await first == 200
    assert held.message_ids() == ["40"]


async def test_a_forwarded_command_is_recorded_as_a_message_and_never_run(
    api: tuple[FakeBotAPI, str], tmp_path: Path
) -> None:
    """A forward of a plain `/recall 爬山` (no @bot) was run as the member's command: the bot answered
    words somebody else wrote elsewhere, and kept them out of the searchable memory."""
    fake, base = api
    fake.updates = []
    app = await build_app(
        ConfigStore(Settings(), None), tmp_path / "data", ManualClock(T0), watch_config=False
    )
    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0))
    responses = Responses()
    origin = {"type": "hidden_user", "sender_user_name": "某人", "date": 1772366000}
    command = [{"type": "bot_command", "offset": 0, "length": 7}]
    await adapter.start(inbound_handler(app, adapter, asyncio.Event(), responses))
    try:
        forward = update_in(GROUP, 1, 1, text="/recall 爬山", entities=command, forward_origin=origin)
        await adapter.feed_update(forward)
        await adapter.feed_update(update_in(GROUP, 2, 2, text="/recall 爬山", entities=command))
        await responses.stop()
        chat = await app.memory.chat("telegram", "-4455")
        assert chat is not None
        found = [h.message for h in await app.memory.search([chat.id], "爬山")]
    finally:
        await adapter.stop()
        await app.close()
    sent = [p for m, p in fake.calls if m == "sendMessage"]
    assert [p["reply_parameters"]["message_id"] for p in sent] == [2], "only the member's own command is run"
    assert [(m.platform_message_id, m.text) for m in found if m] == [("1", "/recall 爬山")], (
        "the forward is a searchable message"
    )


async def test_members_leaving_and_joining_are_marked_in_memory(
    api: tuple[FakeBotAPI, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A member who left (a service message any bot gets) or was banned (a chat_member update, to an
    admin bot) stayed a member of the chat in memory for ever; a join, either way, brings them back."""
    fake, base = api
    fake.updates = []
    app = await build_app(
        ConfigStore(Settings(), None), tmp_path / "data", ManualClock(T0), watch_config=False
    )
    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0))
    await adapter.start(inbound_handler(app, adapter, asyncio.Event()))
    marks: list[float | None] = []

    async def feed(update: dict[str, Any]) -> None:
        await adapter.feed_update(update)
        chat = await app.memory.chat("telegram", "-4455")
        assert chat is not None
        async with app.db.read() as session:
            alice = (await person_ids_for(session, "telegram", ["111"]))["111"]
            member = await session.get(ChatMember, (chat.id, alice))
        assert member is not None
        marks.append(member.left_at)

    try:
        await feed(update_in(GROUP, 1, 1))
        await feed(update_in(GROUP, 2, 2, left_chat_member=ALICE))
        await feed(update_in(GROUP, 3, 3, new_chat_members=[ALICE]))
        await feed(chat_member_update(4, "member", "kicked"))
        await feed(chat_member_update(5, "kicked", "restricted"))  # unbanned, restricted and still out
        await feed(chat_member_update(6, "left", "restricted", is_member=True))  # back, restricted
        with caplog.at_level(logging.WARNING, "adapters.telegram"):
            await feed(update_in(GROUP, 7, 7, left_chat_member=BOT_USER))
    finally:
        await adapter.stop()
        await app.close()
    base_date = 1772366400
    assert marks == [None, base_date + 2, None, base_date + 4, base_date + 4, None, None]
    assert "the bot was removed from Telegram chat -4455" in caplog.text
