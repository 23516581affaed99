"""Qunyi as a nonebot2 plugin (bot.hosts.nonebot): a QQ bot on nonebot's OneBot v11 adapter records what
it receives and sends, as Qunyi's own OneBot adapter would, and answers through nonebot."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import pytest
from nonebot import on_message, on_request
from nonebot.adapters.onebot.v11 import ActionFailed, Adapter, Message, MessageSegment
from nonebot.drivers import Driver

from adapters.onebot_v11 import OneBotAdapter, OneBotConfig
from bot.config import ConfigError
from bot.pid_file import PID_FILE
from bot.plugin import QunyiStopped
from memory.models import ChatMember
from memory.persons.store import person_ids_for
from memory.types import ChatMessage
from tests.adapters.host import stored
from tests.adapters.onebot_v11.peers import SELF_ID, TOKEN, Inbox, Peer, fixture, ok
from tests.bot.hosts.nonebot.account import QQ, answer_get_msg
from tests.waiting import WAIT, eventually

GROUP = "123456"

# what a bot sees in a day: media, an @ of the bot (a CQ string), an @ of a member seen before, a reply
# to the bot's message, a private message, a temporary session's
EVENTS = [
    fixture("group_message_array.json"),
    fixture("group_message_cq.json"),
    fixture("group_message_cq.json") | {"message_id": 5005, "message": "[CQ:at,qq=20002] 周六见"},
    fixture("group_message_reply.json"),
    fixture("private_message.json"),
    fixture("private_message_temp_napcat.json"),
]


def said(n: int, text: str, user: int = 20002) -> dict[str, Any]:
    """A group message event of member `user` with message id `n`."""
    return fixture("group_message_array.json") | {
        "message_id": n,
        "user_id": user,
        "time": 1709294160 + n,
        "message": [{"type": "text", "data": {"text": text}}],
        "sender": {"user_id": user, "nickname": f"member{user}"},
    }


async def onebot_adapter_reads(events: list[dict[str, Any]]) -> list[ChatMessage]:
    """What Qunyi's own OneBot adapter makes of `events` posted by a loopback implementation that
    answers get_login_info and get_msg as the nonebot tests' implementation does."""
    config = OneBotConfig(port=0, access_token=TOKEN, reply_lookup_timeout=WAIT, action_timeout=WAIT)
    adapter = OneBotAdapter(config)
    inbox = Inbox()
    await adapter.start(inbox)
    read: list[ChatMessage] = []
    try:
        async with aiohttp.ClientSession() as session:
            url = f"ws://127.0.0.1:{adapter.bound_port}{config.path}"
            headers = {"Authorization": f"Bearer {TOKEN}", "X-Self-ID": SELF_ID, "X-Client-Role": "Universal"}
            peer = Peer(await session.ws_connect(url, headers=headers))
            peer.responders["get_msg"] = lambda params: ok(answer_get_msg(params))
            for event in events:
                await peer.send(event)
                read.append(await inbox.get())
            await peer.close()
    finally:
        await adapter.stop()
    return read


async def test_messages_are_fed_as_qunyis_own_onebot_adapter_reads_them(qq: QQ) -> None:
    """nonebot edits what it hands plugins (cuts the leading @bot and the reply out of `message`) and
    parses CQ strings its own way: read as the implementation sent it, each message is the same
    ChatMessage, to the field, as Qunyi's OneBot adapter makes of the same JSON."""
    for event in EVENTS:
        await qq.receive(event)
    expected = await onebot_adapter_reads(EVENTS)
    assert qq.fed == expected
    cq, mention, reply, private, temporary = expected[1:]
    assert cq.text.startswith("@群忆 查一下 [上周]") and cq.to_bot
    assert reply.reply_to == "-1234" and reply.to_bot and reply.segments[0].text == "周六晚上八点集合"
    assert mention.text == "@红红（周末有空） 周六见" and mention.mentions == ("20002",)
    assert private.chat_id == "private-20002" and temporary.chat_id == "private-20005"
    assert [message_id for message_id, _, _ in await stored(qq.data_dir)] == [m.message_id for m in expected]


async def test_a_memory_command_is_answered_through_the_bot_and_the_answer_recorded_as_its_own(
    qq: QQ,
) -> None:
    await qq.receive(said(1, "周六去西湖边骑车吧"))
    await qq.receive(said(2, "好啊，早上九点集合", user=20003))
    await qq.receive(said(3, "/recall 西湖", user=20004))
    await eventually(lambda: bool(qq.implementation.sent()), "the answer sent")
    [(api, params)] = qq.implementation.sent()
    assert api == "send_group_msg" and params["group_id"] == int(GROUP)
    reply, answer = params["message"]
    assert (reply.type, reply.data) == ("reply", {"id": 3})  # the /recall
    assert "周六去西湖边骑车吧" in answer.data["text"]
    await qq.stop()  # Qunyi lets the answer under way finish first
    assert (await stored(qq.data_dir))[3:] == [("9001", answer.data["text"], True)]
    # recorded from what the send returned, not a second time from nonebot's API call
    assert not any(isinstance(event, ChatMessage) and event.is_bot for event in qq.fed)


async def test_what_other_plugins_send_is_recorded_as_the_bots(qq: QQ) -> None:
    await qq.receive(said(1, "周六见"))
    await qq.bot.send_group_msg(group_id=int(GROUP), message=Message("好的 ") + MessageSegment.at(20002))
    event = Adapter.json_to_event(fixture("private_message.json"))
    assert event is not None
    await qq.bot.send(event, "在的")  # nonebot's answer to an event: send_msg
    await qq.bot.send_group_msg(group_id=int(GROUP), message="[CQ:face,id=14]")  # a CQ string
    # the bot's message, written on the phone, as the implementation posts it (NapCat: message_sent)
    await qq.receive(
        said(7777, "手机上发的", user=int(SELF_ID)) | {"post_type": "message_sent", "self_id": int(SELF_ID)}
    )
    assert [event.chat_id for event in qq.fed if isinstance(event, ChatMessage) and event.is_bot] == [
        GROUP,
        "private-20002",
        GROUP,
        GROUP,
    ]
    assert await stored(qq.data_dir) == [
        ("1", "周六见", False),
        ("9001", "好的 @member20002", True),
        ("9002", "在的", True),
        ("9003", "[face]", True),
        ("7777", "手机上发的", True),
    ]


async def test_a_merged_forward_another_plugin_sends_is_recorded_as_the_bots_forward(qq: QQ) -> None:
    """A merged forward (send_group_forward_msg, send_private_forward_msg, NapCat's send_forward_msg)
    is one message holding a `forward` segment in the chat: it was not recorded. It now is, read by the
    OneBot reader as a member's forward is read: `[forward]`, with the forward's id."""
    qq.implementation.answers["send_group_forward_msg"] = lambda _: {"message_id": 9101, "forward_id": "f1"}
    qq.implementation.answers["send_private_forward_msg"] = lambda _: {"message_id": 9102, "res_id": "f2"}
    qq.implementation.answers["send_forward_msg"] = lambda _: {"message_id": 9103}
    nodes = Message(MessageSegment.node_custom(20002, "member20002", "周六八点集合"))
    await qq.bot.send_group_forward_msg(group_id=int(GROUP), messages=nodes)
    await qq.bot.send_private_forward_msg(user_id=20002, messages=nodes)
    await qq.bot.call_api("send_forward_msg", message_type="group", group_id=int(GROUP), messages=nodes)
    await qq.receive(said(3, "") | {"message": [{"type": "forward", "data": {"id": "f3"}}]})  # a member's
    forwards = [e for e in qq.fed if isinstance(e, ChatMessage)]
    assert [(e.chat_id, e.text, e.segments[-1].target, e.is_bot) for e in forwards] == [
        (GROUP, "[forward]", "f1", True),
        ("private-20002", "[forward]", "f2", True),
        (GROUP, "[forward]", None, True),
        (GROUP, "[forward]", "f3", False),
    ]
    assert await stored(qq.data_dir) == [
        ("9101", "[forward]", True),
        ("9102", "[forward]", True),
        ("9103", "[forward]", True),
        ("3", "[forward]", False),
    ]


async def test_the_message_after_a_reply_is_recorded_after_it(qq: QQ) -> None:
    """nonebot's OneBot v11 Bot looks up the message a reply answers (get_msg) before any plugin sees
    it, each event in a task of its own: the group's next message, which needs no lookup, was recorded
    first. A chat's events now are in the order they came; another group's wait for nothing."""
    held = asyncio.Event()

    async def slow_get_msg(params: dict[str, Any]) -> dict[str, Any]:
        await held.wait()
        return answer_get_msg(params)

    qq.implementation.answers["get_msg"] = slow_get_msg
    reply = asyncio.create_task(qq.receive(fixture("group_message_reply.json")))  # message 5004
    await eventually(lambda: any(api == "get_msg" for api, _ in qq.implementation.calls), "the lookup")
    after = asyncio.create_task(qq.receive(said(2, "收到")))
    elsewhere = asyncio.create_task(qq.receive(said(3, "另一个群") | {"group_id": 654321}))
    await eventually(
        lambda: any(isinstance(e, ChatMessage) and e.chat_id == "654321" for e in qq.fed),
        "the other group's message fed",
    )
    held.set()
    await asyncio.gather(reply, after, elsewhere)
    order = [message_id for message_id, _, _ in await stored(qq.data_dir)]
    assert order.index("5004") < order.index("2")


async def test_an_event_qunyi_does_not_take_holds_no_message_of_its_chat_back(qq: QQ) -> None:
    """A friend request another plugin is still handling (waiting for an admin, say) is no event of
    Qunyi's: the requester's message after it is recorded at once."""
    deciding = on_request()
    decided = asyncio.Event()

    @deciding.handle()
    async def decide() -> None:
        await decided.wait()

    request = {
        "time": 1709294160,
        "self_id": int(SELF_ID),
        "post_type": "request",
        "request_type": "friend",
        "user_id": 20002,
        "comment": "加个好友",
        "flag": "f1",
    }
    pending = asyncio.create_task(qq.receive(request))
    message = asyncio.create_task(qq.receive(fixture("private_message.json")))  # from 20002
    try:
        await eventually(
            lambda: any(isinstance(e, ChatMessage) and e.message_id == "6001" for e in qq.fed),
            "the requester's message fed while the request is being decided",
        )
    finally:
        decided.set()
        await asyncio.gather(pending, message)
        deciding.destroy()
    assert await stored(qq.data_dir) == [("6001", "在吗", False)]


async def test_a_message_another_plugin_blocks_is_recorded_all_the_same(qq: QQ) -> None:
    """nonebot's on_message blocks by default, at priority 1: a recorder of a later priority saw none
    of the messages such a plugin handles."""
    blocker = on_message()

    @blocker.handle()
    async def handled() -> None:
        pass

    try:
        await qq.receive(said(1, "@群忆 周六去哪"))
    finally:
        blocker.destroy()
    assert await stored(qq.data_dir) == [("1", "@群忆 周六去哪", False)]


async def test_a_recall_notice_forgets_the_message(qq: QQ) -> None:
    await qq.receive(fixture("group_message_array.json"))
    await qq.receive(said(2, "收到"))
    await qq.receive(fixture("group_recall.json"))  # message -2147400001 recalled
    assert await stored(qq.data_dir) == [("2", "收到", False)]


async def test_a_member_leaving_is_marked_gone(qq: QQ) -> None:
    await qq.receive(fixture("group_message_array.json"))  # 20002 writes
    await qq.receive(fixture("group_decrease_leave.json"))
    chat = await qq.qunyi.memory.chat("qq", GROUP)
    assert chat is not None
    async with qq.qunyi.app.db.read() as session:
        person = (await person_ids_for(session, "qq", ["20002"]))["20002"]
        member = await session.get(ChatMember, (chat.id, person))
    assert member is not None and member.left_at == 1709294400


async def test_a_failing_send_loses_nothing(qq: QQ, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)

    def refused(_: dict[str, Any]) -> Any:
        raise ActionFailed(status="failed", retcode=1200, message="group muted")

    qq.implementation.answers["send_group_msg"] = refused
    await qq.receive(said(1, "周六去西湖"))
    await qq.receive(said(2, "/recall 西湖", user=20003))
    await eventually(lambda: "not sent" in caplog.text, "the failed send logged")
    assert "group muted" in caplog.text
    assert await stored(qq.data_dir) == [("1", "周六去西湖", False), ("2", "/recall 西湖", False)]


async def test_nonebots_start_and_stop_open_and_close_the_data_directory(
    driver: Driver, qunyi_module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[reply]\nprobability = 0.5\n", encoding="utf-8")
    monkeypatch.setattr(driver.config, "qunyi_config", config, raising=False)
    data_dir = tmp_path / "data"
    with pytest.raises(QunyiStopped):
        qunyi_module.qunyi()
    await driver._lifespan.startup()
    try:
        assert (data_dir / PID_FILE).exists()
        assert qunyi_module.qunyi().app.settings.reply.probability == 0.5
    finally:
        await driver._lifespan.shutdown()
    assert not (data_dir / PID_FILE).exists()
    with pytest.raises(QunyiStopped):
        qunyi_module.qunyi()


async def test_a_broken_qunyi_config_stops_nonebots_start(
    driver: Driver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[reply]\nprobability = 7\n", encoding="utf-8")
    monkeypatch.setattr(driver.config, "qunyi_config", config, raising=False)
    try:
        with pytest.raises(ConfigError, match=r"reply\.probability"):
            await driver._lifespan.startup()
    finally:
        await driver._lifespan.shutdown()
    assert not (tmp_path / "data" / PID_FILE).exists()
