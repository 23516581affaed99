"""End to end: the adapter against a loopback peer speaking OneBot v11 from the spec's example payloads."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import pytest
from aiohttp import WSCloseCode, web

from adapters.onebot_v11 import ActionFailed, ActionTimeout, NotConnected, OneBotAdapter, OneBotConfig
from memory.types import ChatKind, MessageDeletion, SegmentKind
from tests.adapters.held import HeldHandler, stop_waits
from tests.adapters.onebot_v11.frames import ManualReads
from tests.adapters.onebot_v11.peers import SELF_ID, TOKEN, WAIT, ConnectPeer, Inbox, Peer, fixture, ok
from tests.waiting import eventually

Reverse = tuple[OneBotAdapter, Inbox, str]


async def test_missing_token_is_401_and_wrong_token_is_403(
    session: aiohttp.ClientSession, reverse: Reverse
) -> None:
    _, _, url = reverse
    with pytest.raises(aiohttp.WSServerHandshakeError) as missing:
        await session.ws_connect(url, headers={"X-Self-ID": SELF_ID})
    assert missing.value.status == 401
    with pytest.raises(aiohttp.WSServerHandshakeError) as wrong:
        await session.ws_connect(url, headers={"X-Self-ID": SELF_ID, "Authorization": "Bearer nope"})
    assert wrong.value.status == 403


async def test_token_in_query_is_accepted(session: aiohttp.ClientSession, reverse: Reverse) -> None:
    adapter, _, url = reverse
    async with session.ws_connect(f"{url}?access_token={TOKEN}", headers={"X-Self-ID": "777"}):
        await adapter.wait_connected(WAIT)
        assert adapter.self_ids == ["777"]


async def test_missing_self_id_is_closed_with_1008(session: aiohttp.ClientSession, reverse: Reverse) -> None:
    _, _, url = reverse
    async with session.ws_connect(url, headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
        msg = await ws.receive(timeout=WAIT)
        assert msg.type is aiohttp.WSMsgType.CLOSE
        assert ws.close_code == WSCloseCode.POLICY_VIOLATION


async def test_a_reconnection_with_the_same_self_id_replaces_the_old_connection(
    session: aiohttp.ClientSession,
    reverse: Reverse,
    connect_peer: ConnectPeer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A reconnection was refused with 1008 ("self id … is already connected") while the old socket,
    half-open after a network blip, stayed listed: the bot was deaf until the heartbeat watchdog."""
    caplog.set_level(logging.INFO, "adapters.onebot_v11")
    adapter, inbox, url = reverse
    old = await connect_peer()
    pending = asyncio.ensure_future(adapter.call_action("get_status", timeout=30))  # never answered
    await old.next_action("get_status")
    await old.send(fixture("group_message_array.json"))  # received on the old one before the takeover
    assert (await inbox.get()).message_id == "-2147400001"
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Self-ID": SELF_ID, "X-Client-Role": "Universal"}
    async with session.ws_connect(url, headers=headers) as ws:
        new = Peer(ws)
        with pytest.raises(NotConnected, match="replaced by a newer connection"):
            await asyncio.wait_for(pending, WAIT)
        await eventually(lambda: old.ws.closed, "the old connection closed")
        assert old.ws.closed and old.ws.close_code == WSCloseCode.GOING_AWAY
        assert adapter.self_ids == [SELF_ID]
        await new.send(fixture("group_message_cq.json"))
        assert (await inbox.get()).to_bot  # received on the new one
        sending = asyncio.ensure_future(adapter.send_text("123456", "在"))
        request = await new.next_action("send_group_msg")
        await ws.send_json({**ok({"message_id": 7}), "echo": request["echo"]})
        assert (await sending).message_id == "7"
        await new.close()
    assert "closing its previous connection (replaced)" in caplog.text


async def quiet(connect_peer: ConnectPeer, reads: ManualReads) -> Peer:
    """A connected peer whose own first frames (its lifecycle event, its answer to get_login_info) the
    adapter has read: from then on it reads only what the test sends."""
    peer = await connect_peer()
    lifecycle = fixture("lifecycle_connect.json") | {"self_id": int(SELF_ID)}
    login = ok({"user_id": int(SELF_ID), "nickname": "群忆"})
    await eventually(lambda: reads.read(lifecycle) and reads.read(login), "the peer's first frames read")
    return peer


async def beat(peer: Peer, reads: ManualReads, interval: int) -> None:
    """Send a heartbeat saying the next comes in `interval` ms; return once the adapter has read it."""
    later = len(reads.frames)  # a time of its own, to tell it from the beats before it
    heartbeat = fixture("heartbeat.json") | {"interval": interval, "time": 1709294105 + later}
    await peer.send(heartbeat)
    await eventually(lambda: reads.read(heartbeat), "the heartbeat read")


async def test_a_connection_silent_for_stale_timeout_is_closed(session: aiohttp.ClientSession) -> None:
    """The watchdog in real seconds: a connection that sends nothing is closed after `stale_timeout`."""
    config = OneBotConfig(port=0, access_token=TOKEN, stale_timeout=0.05, reply_lookup_timeout=WAIT)
    adapter = OneBotAdapter(config)
    await adapter.start(Inbox())
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Self-ID": SELF_ID, "X-Client-Role": "Universal"}
    try:
        async with session.ws_connect(
            f"ws://127.0.0.1:{adapter.bound_port}{config.path}", headers=headers
        ) as ws:
            frames = [await ws.receive(timeout=WAIT)]
            while frames[-1].type is aiohttp.WSMsgType.TEXT:  # the get_login_info it asks, unanswered
                frames.append(await ws.receive(timeout=WAIT))
            assert frames[-1].type is aiohttp.WSMsgType.CLOSE and ws.close_code == WSCloseCode.GOING_AWAY
    finally:
        await adapter.stop()


@pytest.mark.parametrize("interval", [1000, 1], ids=["1s", "1ms-taken-as-1s"])
async def test_a_connection_silent_for_three_heartbeats_is_closed_as_stale(
    reverse: Reverse, connect_peer: ConnectPeer, reads: ManualReads, interval: int
) -> None:
    """Three missed beats close the connection, long before stale_timeout. `interval: 1` (a buggy or
    hostile implementation) was trusted: the limit was 3 ms, so a healthy connection was closed as
    stale between two frames; an interval under a second is taken as a second."""
    adapter, _, _ = reverse
    peer = await quiet(connect_peer, reads)
    await beat(peer, reads, interval)
    assert reads.advance(2.75) == 0, "still open after two missed beats and most of a third"
    assert reads.advance(0.25) == 1, "stale at the third missed beat"
    await eventually(lambda: peer.ws.closed and not adapter.self_ids, "closed as stale")
    assert peer.ws.close_code == WSCloseCode.GOING_AWAY


async def test_heartbeats_keep_the_connection_alive(
    reverse: Reverse, connect_peer: ConnectPeer, reads: ManualReads
) -> None:
    adapter, _, _ = reverse
    peer = await quiet(connect_peer, reads)
    for _ in range(4):  # 11 s from the first beat, past its 3 s limit, never 3 s without a beat
        await beat(peer, reads, 1000)
        assert reads.advance(2.75) == 0, "each beat gives the connection 3 s again"
    assert adapter.self_ids == [SELF_ID] and not peer.ws.closed


async def test_group_messages_in_array_and_cq_form(reverse: Reverse, connect_peer: ConnectPeer) -> None:
    _, inbox, _ = reverse
    peer = await connect_peer()
    await peer.send(fixture("heartbeat.json"))  # a meta event: not delivered
    await peer.send(fixture("group_message_array.json"))
    await peer.send(fixture("group_message_cq.json"))
    first, second = await inbox.get(), await inbox.get()
    assert first.message_id == "-2147400001" and first.display_name == "红红（周末有空）"
    assert first.segments[-1].kind is SegmentKind.IMAGE and not first.to_bot
    assert second.to_bot and second.text == "@群忆 查一下 [上周] 谁说了 A&B,好吗"


async def test_a_message_of_control_characters_only_is_passed_over(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    """It was delivered, and stored, as an empty message; every adapter now passes such a message over."""
    _, inbox, _ = reverse
    peer = await connect_peer()
    blank = fixture("group_message_array.json")
    blank["message"] = [{"type": "text", "data": {"text": "\x01\x02\u200b"}}]
    await peer.send(blank)
    await peer.send(fixture("group_message_cq.json"))
    assert (await inbox.get()).to_bot  # the next message; the blank one never came
    assert inbox.queue.empty()


async def test_a_recalled_message_is_delivered_as_a_deletion_and_leaves_the_quote_cache(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    _, inbox, _ = reverse
    peer = await connect_peer()
    lookups: list[dict[str, Any]] = []
    peer.responders["get_msg"] = lambda params: (
        lookups.append(params) or {"status": "failed", "retcode": 1200}
    )
    await peer.send(fixture("group_message_array.json"))
    await inbox.get()
    await peer.send(fixture("group_recall.json"))
    assert await inbox.event() == MessageDeletion("qq", "123456", "-2147400001", ChatKind.GROUP)
    reply = fixture("group_message_reply.json")
    reply["message"][0]["data"]["id"] = "-2147400001"
    await peer.send(reply | {"group_id": 123456})
    answer = await inbox.get()
    assert answer.reply_to == "-2147400001" and answer.segments[0].text == ""  # not quoted from the cache
    assert lookups == [{"message_id": -2147400001}]


async def test_frames_that_cannot_be_handled_are_skipped_and_the_connection_stays(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    _, inbox, _ = reverse
    peer = await connect_peer()
    heartbeat = '{"post_type": "meta_event", "meta_event_type": "heartbeat", "interval": %s}'
    for frame in ("[" * 100_000, heartbeat % "1e400", heartbeat % ("9" * 400), "{not json"):
        await peer.ws.send_str(frame)
    await peer.send(fixture("group_message_array.json"))
    delivered = await inbox.get()
    assert delivered.message_id == "-2147400001"
    assert not peer.ws.closed


async def test_a_skipped_frame_is_logged_escaped_and_cut_not_as_raw_bytes(
    reverse: Reverse, connect_peer: ConnectPeer, caplog: pytest.LogCaptureFixture
) -> None:
    """A binary frame's NUL, a line break that would forge a log line and a terminal escape went into
    the warning as they came."""
    _, inbox, _ = reverse
    peer = await connect_peer()
    forged = "x\x00\n2026-11-23 WARNING qunyi: forged\x1b[2J" + "群" * 500
    await peer.ws.send_bytes(forged.encode())
    await peer.send(fixture("group_message_array.json"))
    assert (await inbox.get()).message_id == "-2147400001"
    [warning] = [r.getMessage() for r in caplog.records if "not JSON" in r.getMessage()]
    assert "x\\x00\\x0a2026-11-23 WARNING qunyi: forged\\x1b[2J群" in warning
    assert not any(c in warning for c in "\x00\n\x1b") and warning.endswith("群…")
    assert warning.count("群") < 200


async def test_a_message_the_neutral_form_refuses_is_skipped_with_a_warning_not_a_traceback(
    reverse: Reverse, connect_peer: ConnectPeer, caplog: pytest.LogCaptureFixture
) -> None:
    """A time before 1970 passed MessageEvent.from_dict; ChatMessage refused it with an InvalidMessage
    the adapter did not catch, logged as a failure with its traceback."""
    _, inbox, _ = reverse
    peer = await connect_peer()
    await peer.send(fixture("group_message_array.json") | {"time": -1, "message_id": 1})
    await peer.send(fixture("group_message_array.json"))
    assert (await inbox.get()).message_id == "-2147400001"
    skipped = [r for r in caplog.records if "OneBot message event skipped" in r.getMessage()]
    assert len(skipped) == 1 and "out of range" in skipped[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]


async def test_mentioned_bot_answers_with_send_group_msg(reverse: Reverse, connect_peer: ConnectPeer) -> None:
    adapter, inbox, _ = reverse
    peer = await connect_peer()
    peer.responders["send_group_msg"] = lambda params: ok({"message_id": -7001})
    await peer.send(fixture("group_message_cq.json"))
    incoming = await inbox.get()
    assert incoming.to_bot
    sent = await adapter.send_text(
        incoming.chat_id, "上周是小红说的 [CQ:at,qq=1]", reply_to=incoming.message_id
    )
    request = await peer.next_action("send_group_msg")
    assert request["echo"]
    assert request["params"] == {
        "group_id": 123456,
        "message": [
            {"type": "reply", "data": {"id": 5003}},
            {"type": "text", "data": {"text": "上周是小红说的 [CQ:at,qq=1]"}},
        ],
    }
    assert sent.message_id == "-7001" and sent.is_bot and sent.sender_id == SELF_ID
    assert sent.sender_name == "群忆" and sent.reply_to == "5003"


async def test_reply_to_the_bot_is_resolved_with_get_msg(reverse: Reverse, connect_peer: ConnectPeer) -> None:
    _, inbox, _ = reverse
    peer = await connect_peer()
    peer.responders["get_msg"] = lambda params: ok(fixture("get_msg_bot_message.json"))
    await peer.send(fixture("group_message_reply.json"))
    request = await peer.next_action("get_msg")
    assert request["params"] == {"message_id": -1234}
    msg = await inbox.get()
    assert msg.reply_to == "-1234" and msg.to_bot
    assert msg.segments[0].kind is SegmentKind.REPLY and msg.segments[0].text == "周六晚上八点集合"


async def test_reply_whose_lookup_fails_is_still_delivered(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    _, inbox, _ = reverse
    peer = await connect_peer()
    peer.responders["get_msg"] = lambda params: {"status": "failed", "retcode": 1200, "wording": "消息不存在"}
    await peer.send(fixture("group_message_reply.json"))
    msg = await inbox.get()
    assert msg.reply_to == "-1234" and not msg.to_bot


async def test_failed_action_raises_with_retcode(reverse: Reverse, connect_peer: ConnectPeer) -> None:
    adapter, _, _ = reverse
    peer = await connect_peer()
    peer.responders["set_group_ban"] = lambda params: {
        "status": "failed",
        "retcode": 102,
        "data": None,
        "message": "no permission",
        "wording": "权限不足",
    }
    with pytest.raises(ActionFailed) as failed:
        await adapter.call_action("set_group_ban", {"group_id": 123456, "user_id": 20002, "duration": 60})
    assert failed.value.retcode == 102 and "权限不足" in str(failed.value)


async def test_unanswered_action_times_out(reverse: Reverse, connect_peer: ConnectPeer) -> None:
    adapter, _, _ = reverse
    await connect_peer()
    with pytest.raises(ActionTimeout):
        await adapter.call_action("get_group_list", timeout=0.1)


async def test_private_reply_uses_send_private_msg(reverse: Reverse, connect_peer: ConnectPeer) -> None:
    adapter, inbox, _ = reverse
    peer = await connect_peer()
    peer.responders["send_private_msg"] = lambda params: ok({"message_id": 9})
    await peer.send(fixture("private_message.json"))
    incoming = await inbox.get()
    assert incoming.to_bot
    assert incoming.chat_id == "private-20002"
    sent = await adapter.send_text(incoming.chat_id, "在", chat_kind=ChatKind.PRIVATE)
    request = await peer.next_action("send_private_msg")
    assert request["params"]["user_id"] == 20002 and sent.chat_id == "private-20002"
    # a bare QQ number names the same private chat, never the group of that number
    bare = await adapter.send_text("20002", "在", chat_kind=ChatKind.PRIVATE)
    assert (await peer.next_action("send_private_msg"))["params"]["user_id"] == 20002
    assert bare.chat_id == "private-20002"


async def test_a_temporary_session_is_answered_through_its_group(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    """A private message from a group member who is no friend (群临时会话: `sub_type` "group", the group in
    `sender.group_id` as go-cqhttp posts it) was answered with `send_private_msg` without the group:
    the implementation cannot open the session. A friend's message later is a friend chat again."""
    adapter, inbox, _ = reverse
    peer = await connect_peer()
    peer.responders["send_private_msg"] = lambda params: ok({"message_id": 9})
    await peer.send(fixture("private_message_temp.json"))
    incoming = await inbox.get()
    assert incoming.chat_id == "private-20003" and incoming.to_bot
    await adapter.send_text(incoming.chat_id, "八点", chat_kind=ChatKind.PRIVATE)
    params = (await peer.next_action("send_private_msg"))["params"]
    assert (params["user_id"], params["group_id"]) == (20003, 123456)
    top_level = fixture("private_message_temp.json") | {
        "message_id": 6102,
        "user_id": 20004,
        "group_id": 654321,
    }
    top_level["sender"] = {"user_id": 20004, "nickname": "小李"}  # the group at the top level instead
    await peer.send(top_level)
    await adapter.send_text((await inbox.get()).chat_id, "好", chat_kind=ChatKind.PRIVATE)
    params = (await peer.next_action("send_private_msg"))["params"]
    assert (params["user_id"], params["group_id"]) == (20004, 654321)
    await peer.send(fixture("private_message.json") | {"user_id": 20003, "sender": {"user_id": 20003}})
    await adapter.send_text((await inbox.get()).chat_id, "在", chat_kind=ChatKind.PRIVATE)
    assert "group_id" not in (await peer.next_action("send_private_msg"))["params"], "a friend now"
    await adapter.send_text("private-20002", "在", chat_kind=ChatKind.PRIVATE)
    assert "group_id" not in (await peer.next_action("send_private_msg"))["params"]


@pytest.mark.parametrize(
    ("name", "group"),
    [
        ("private_message_temp_napcat.json", 123456),
        ("private_message_temp_napcat_unknown.json", None),
        ("private_message_temp_lagrange.json", None),
    ],
)
async def test_a_temporary_session_of_napcat_or_lagrange_is_answered_as_it_can_be(
    reverse: Reverse, connect_peer: ConnectPeer, name: str, group: int | None
) -> None:
    """NapCat names a temporary session's group at the top level, and its stand-in group 284840486 when
    it could not look the session up, which the answer was sent through; Lagrange.OneBot names no group.
    The answer goes through the group only when the event names a real one."""
    adapter, inbox, _ = reverse
    peer = await connect_peer()
    peer.responders["send_private_msg"] = lambda params: ok({"message_id": 9})
    await peer.send(fixture(name))
    await adapter.send_text((await inbox.get()).chat_id, "好", chat_kind=ChatKind.PRIVATE)
    params = (await peer.next_action("send_private_msg"))["params"]
    assert params.get("group_id") == group


async def test_no_connection_means_not_connected(reverse: Reverse) -> None:
    adapter, _, _ = reverse
    with pytest.raises(NotConnected):
        await adapter.send_text("123456", "hello")


@pytest.mark.parametrize("reader_crashes", [False, True])
async def test_forward_mode_reconnects_after_a_dropped_connection(
    reader_crashes: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bot dials a loopback implementation, which drops the first connection after one event.

    With `reader_crashes` the first connection's reader also fails unexpectedly as it ends.
    """
    if reader_crashes:
        serve = OneBotAdapter._serve
        crashed: list[bool] = []

        async def failing_serve(self: OneBotAdapter, conn: Any) -> None:
            await serve(self, conn)
            if not crashed:
                crashed.append(True)
                raise RuntimeError("reader failed")

        monkeypatch.setattr(OneBotAdapter, "_serve", failing_serve)
    connections: list[web.WebSocketResponse] = []
    auth_headers: list[str | None] = []
    second_open = asyncio.Event()

    async def implementation(request: web.Request) -> web.WebSocketResponse:
        auth_headers.append(request.headers.get("Authorization"))
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        connections.append(ws)
        await ws.send_json(fixture("lifecycle_connect.json"))
        if len(connections) == 1:
            await ws.send_json(fixture("group_message_array.json"))
            await ws.close()  # dropped
            return ws
        second_open.set()
        async for msg in ws:  # answer actions on the second connection
            request_data = msg.json()
            if request_data["action"] == "send_group_msg":
                await ws.send_json(ok({"message_id": 42}) | {"echo": request_data["echo"]})
        return ws

    app = web.Application()
    app.router.add_get("/", implementation)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    config = OneBotConfig(
        mode="forward",
        forward_url=f"ws://127.0.0.1:{port}/",
        access_token=TOKEN,
        reconnect_initial=0.05,
        reconnect_max=0.1,
        action_timeout=WAIT,
        reply_lookup_timeout=0.2,  # get_login_info is never answered: the first message waits this
    )
    adapter = OneBotAdapter(config)
    inbox = Inbox()
    try:
        await adapter.start(inbox)
        first = await inbox.get()
        assert first.message_id == "-2147400001"
        await asyncio.wait_for(second_open.wait(), WAIT)
        await adapter.wait_connected(WAIT)
        sent = await adapter.send_text("123456", "回来了")
        assert sent.message_id == "42" and sent.sender_id == SELF_ID
        assert len(connections) == 2
        assert auth_headers == [f"Bearer {TOKEN}", f"Bearer {TOKEN}"]
    finally:
        await adapter.stop()
        await runner.cleanup()


async def test_messages_received_just_before_stop_are_all_handled(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    adapter, _, _ = reverse
    held = HeldHandler()
    adapter._handler = held
    peer = await connect_peer()
    event = fixture("group_message_array.json")
    for n in range(6):
        await peer.send(event | {"message_id": 1000 + n})
    await asyncio.wait_for(held.started.wait(), WAIT)  # the first is being handled
    # The other five are received too: the answer to an action called now comes after them.
    peer.responders["get_status"] = lambda _params: ok({"online": True, "good": True})
    await adapter.call_action("get_status")
    stopping = asyncio.ensure_future(adapter.stop())
    await stop_waits(stopping, adapter._in_flight.draining)
    held.release.set()
    await asyncio.wait_for(stopping, WAIT)
    assert held.message_ids() == [str(1000 + n) for n in range(6)]


async def test_reply_quote_never_comes_from_another_chat(reverse: Reverse, connect_peer: ConnectPeer) -> None:
    _, inbox, _ = reverse
    peer = await connect_peer()
    peer.responders["get_msg"] = lambda params: ok(fixture("get_msg_bot_message.json"))
    # Another group has a message with the id the reply below points to (ids recur across chats).
    elsewhere = fixture("group_message_array.json") | {
        "group_id": 999999,
        "message_id": -1234,
        "message": [{"type": "text", "data": {"text": "别的群的私事"}}],
    }
    await peer.send(elsewhere)
    assert (await inbox.get()).chat_id == "999999"
    await peer.send(fixture("group_message_reply.json"))
    request = await peer.next_action("get_msg")
    assert request["params"] == {"message_id": -1234}
    msg = await inbox.get()
    assert msg.chat_id == "123456" and msg.to_bot
    assert msg.segments[0].text == "周六晚上八点集合"


async def test_a_fetched_reply_target_of_another_chat_is_not_quoted(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    _, inbox, _ = reverse
    peer = await connect_peer()
    # get_msg answers with a message of another group (an id that recurs there, or a forged reply)
    other_group = fixture("get_msg_bot_message.json") | {"group_id": 999999, "user_id": 20003}
    other_group["message"] = [{"type": "text", "data": {"text": "别的群的私事"}}]
    peer.responders["get_msg"] = lambda params: ok(other_group)
    await peer.send(fixture("group_message_reply.json"))
    await peer.next_action("get_msg")
    msg = await inbox.get()
    assert msg.chat_id == "123456" and "别的群的私事" not in msg.segments[0].text
    # nor a private message, which names no group (or, a temporary session's, the group it came
    # through): a member's reply pointing at its id would quote what someone told the bot alone
    told_alone = {
        "message_type": "private",
        "user_id": 20003,
        "sender": {"user_id": 20003, "nickname": "小蓝"},
    }
    said = [{"type": "text", "data": {"text": "只跟你说的私事"}}]
    for answer in (told_alone, told_alone | {"group_id": 123456, "sub_type": "group"}):
        peer.responders["get_msg"] = lambda params, answer=answer: ok(
            fixture("get_msg_bot_message.json") | {"group_id": None} | answer | {"message": said}
        )
        forged = fixture("group_message_reply.json") | {"message_id": 5100 + len(answer)}
        forged["message"] = [
            {"type": "reply", "data": {"id": str(-7000 - len(answer))}},
            forged["message"][1],
        ]
        await peer.send(forged)
        await peer.next_action("get_msg")
        msg = await inbox.get()
        assert msg.chat_id == "123456" and "只跟你说的私事" not in msg.segments[0].text, answer
    # in a private chat, a message of someone other than the two parties is another chat's too
    stranger = other_group | {"message_type": "private", "group_id": None}
    peer.responders["get_msg"] = lambda params: ok(stranger)
    private = fixture("private_message.json") | {"message_id": 6002}
    reply = {"type": "reply", "data": {"id": "-4321"}}
    private["message"] = [reply, {"type": "text", "data": {"text": "嗯"}}]
    await peer.send(private)
    await peer.next_action("get_msg")
    msg = await inbox.get()
    assert msg.chat_id == "private-20002" and "别的群的私事" not in msg.segments[0].text
    # the other party's own message is quoted as before
    peer.responders["get_msg"] = lambda params: ok(stranger | {"user_id": 20002})
    private["message"][0] = {"type": "reply", "data": {"id": "-5555"}}
    await peer.send(private | {"message_id": 6003})
    await peer.next_action("get_msg")
    msg = await inbox.get()
    assert msg.segments[0].text == "别的群的私事"


async def test_a_private_chat_and_a_group_of_the_same_number_share_no_names(
    reverse: Reverse, connect_peer: ConnectPeer
) -> None:
    _, inbox, _ = reverse
    peer = await connect_peer()
    private = fixture("private_message.json") | {
        "user_id": 30003,
        "message_id": 7001,
        "message": "私聊里说的",
        "sender": {"user_id": 30003, "nickname": "私聊昵称"},
    }
    await peer.send(private)
    assert (await inbox.get()).chat_id == "private-30003"
    group = fixture("group_message_array.json") | {
        "group_id": 30003,
        "message_id": 7002,
        "message": [{"type": "at", "data": {"qq": "30003"}}, {"type": "text", "data": {"text": " 在吗"}}],
    }
    await peer.send(group)
    msg = await inbox.get()
    assert msg.chat_id == "30003" and "私聊昵称" not in msg.text, "group 30003 is not user 30003"


async def test_a_token_that_is_not_utf8_is_403_not_a_server_error(reverse: Reverse) -> None:
    """An Authorization header of bytes that are not UTF-8 reached the comparison as text with
    surrogates, whose `encode()` raised: a 500 instead of the 403 of a wrong token."""
    _, _, url = reverse
    address = url.removeprefix("ws://")
    host, port = address.split("/", 1)[0].rsplit(":", 1)
    path = "/" + address.split("/", 1)[1]
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        f"X-Self-ID: {SELF_ID}\r\n".encode()
        + b"Authorization: Bearer \xff\xfe\r\n\r\n"
    )
    await writer.drain()
    status = await asyncio.wait_for(reader.readline(), WAIT)
    writer.close()
    assert status.split()[1] == b"403"
