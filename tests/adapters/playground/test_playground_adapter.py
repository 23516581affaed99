"""The playground adapter on a real loopback port: posting, reading, access, bad input, stopping."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
import pytest
from pydantic import ValidationError

from adapters.playground import PlaygroundConfig
from adapters.playground import adapter as playground_adapter
from bot.config import ConfigError
from bot.config.loader import parse_settings
from bot.config.settings import Settings
from memory.types import ChatKind, ChatMessage, InboundEvent, MessageDeletion
from tests.adapters.held import HeldHandler, stop_waits
from tests.adapters.playground.conftest import TOKEN, Inbox, Playground, make_adapter, started
from tests.waiting import WAIT

API_CALLS = [("GET", "/api/chats"), ("GET", "/api/chats/g1/messages?after=0"), ("POST", "/api/messages")]
GOOD = {"chat_id": "g1", "user": "alice", "text": "hi"}


async def test_a_post_reaches_the_bot_and_its_answer_joins_that_chats_transcript(
    playground: Playground, inbox: Inbox
) -> None:
    status, body = await playground.post(chat_id="g1", user="alice", text="今晚开黑吗")
    assert status == 200, body
    posted = body["message"]
    assert [(e.chat_id, e.message_id, e.sender_name) for e in inbox.events] == [  # type: ignore[union-attr]
        ("g1", posted["id"], "alice")
    ]
    answer = await playground.adapter.send_text("g1", "九点", reply_to=posted["id"])
    assert isinstance(answer, ChatMessage) and answer.is_bot and answer.sender_name == "群忆"
    assert answer.message_id != posted["id"] and answer.platform == "playground"
    messages = await playground.transcript("g1")
    assert [(m["sender"], m["text"], m["is_bot"], m["reply_to"]) for m in messages] == [
        ("alice", "今晚开黑吗", False, None),
        ("群忆", "九点", True, posted["id"]),
    ]
    assert await playground.transcript("g1", after=messages[0]["seq"]) == messages[1:]
    assert await playground.transcript("g2") == []
    status, chats = await playground.call("GET", "/api/chats")
    assert chats["bot"] == {"id": "bot", "name": "群忆"}
    assert [(c["chat_id"], c["chat_kind"]) for c in chats["chats"]] == [("g1", "group")]


async def test_every_api_call_needs_the_token_and_nothing_answers_cross_site(
    playground: Playground, inbox: Inbox
) -> None:
    for method, path in API_CALLS:
        for token in (None, "wrong-token", TOKEN + "x"):
            status, body = await playground.call(method, path, token=token, json=GOOD)
            assert status == 401 and "Bearer" in body["error"], (method, path, token)
    assert inbox.events == [] and playground.adapter.transcripts.chats() == []
    status, _ = await playground.call(
        "POST", "/api/messages", token=None, json=GOOD, headers={"Authorization": f"Basic {TOKEN}"}
    )
    assert status == 401
    async with playground.session.options(
        playground.base + "/api/messages",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    ) as preflight:
        assert "Access-Control-Allow-Origin" not in preflight.headers
    async with playground.session.get(playground.base + "/") as page:
        assert page.status == 200 and page.charset == "utf-8" and page.content_type == "text/html"
        csp = page.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "connect-src 'self'" in csp
        assert "Access-Control-Allow-Origin" not in page.headers
        assert "innerHTML" not in await (await playground.session.get(playground.base + "/page.js")).text()


async def test_a_request_naming_a_host_that_is_not_loopback_is_refused(playground: Playground) -> None:
    """A DNS rebinding: another site's name pointed at 127.0.0.1 reaches the server with its own Host."""
    port = playground.base.rsplit(":", 1)[1]
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", ""):
        for path in ("/", "/api/chats"):
            status, body = await playground.call("GET", path, headers={"Host": host})
            assert status == 403 and "loopback" in body["error"], (host, path)
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "[::1]"):
        assert (await playground.call("GET", "/api/chats", headers={"Host": host}))[0] == 200


async def test_with_allow_remote_any_host_name_is_served() -> None:
    remote = await started(make_adapter(allow_remote=True), Inbox())
    try:
        status, _ = await remote.call("GET", "/api/chats", headers={"Host": "bot.example.org:80"})
        assert status == 200
    finally:
        await remote.session.close()
        await remote.adapter.stop()


def test_a_host_that_is_not_loopback_is_refused_at_config_load() -> None:
    with pytest.raises(ValidationError, match=r"\[adapters.playground\] allow_remote"):
        PlaygroundConfig(host="0.0.0.0")
    with pytest.raises(ConfigError, match=r"adapters\.playground: .*not a loopback"):
        parse_settings('[adapters.playground]\nhost = "192.168.1.5"\n', "cfg.toml", env={})
    text = '[adapters]\nenabled = ["playground"]\n'
    text += '[adapters.playground]\nhost = "0.0.0.0"\nallow_remote = true\n'
    allowed = parse_settings(text, "cfg.toml", env={})
    assert allowed.adapters.playground.host == "0.0.0.0" and allowed.adapters.enabled == ["playground"]
    assert Settings().adapters.playground.port == 8766 and Settings().adapters.playground.host == "127.0.0.1"


async def test_the_token_shows_only_in_the_start_address(caplog: pytest.LogCaptureFixture) -> None:
    assert TOKEN not in repr(PlaygroundConfig(token=TOKEN))
    caplog.set_level(logging.DEBUG)
    running = await started(make_adapter(), Inbox())
    try:
        await running.post(**GOOD)
        await running.call("GET", "/api/chats", token="wrong")
    finally:
        await running.session.close()
        await running.adapter.stop()
    holding = [r.getMessage() for r in caplog.records if TOKEN in r.getMessage()]
    assert holding == [f"web playground on {running.adapter.url}"]
    assert running.adapter.url is not None and running.adapter.url.endswith(f"/#token={TOKEN}")


async def test_without_a_configured_token_a_random_one_guards_the_api() -> None:
    first, second = make_adapter(token=""), make_adapter(token="")
    running = await started(first, Inbox())
    try:
        assert first.url is not None and "#token=" in first.url
        made = first.url.split("#token=", 1)[1]
        assert len(made) >= 24 and made != second._token
        assert (await running.call("GET", "/api/chats", token=made))[0] == 200
        assert (await running.call("GET", "/api/chats", token=""))[0] == 401
    finally:
        await running.session.close()
        await first.stop()


BAD_BODIES: list[tuple[str, bytes, int, str]] = [
    ("malformed JSON", b'{"chat_id": "g1", "user": ', 400, "not valid JSON"),
    ("not an object", b'"hi"', 400, "JSON object"),
    ("a missing field", json.dumps({"chat_id": "g1", "user": "alice"}).encode(), 400, "text is missing"),
    ("an empty text", json.dumps(GOOD | {"text": ""}).encode(), 400, "text must not be empty"),
    (
        "a text that shows nothing",
        json.dumps(GOOD | {"text": "\x01\u200b"}).encode(),
        400,
        "text must not be empty",
    ),
    ("binary", b"\x00\xff\xfe\x89PNG\r\n", 400, "not UTF-8"),
    ("invalid UTF-8", b'{"chat_id": "g1", "user": "\xe4\xbd", "text": "hi"}', 400, "not UTF-8"),
    ("a huge body", json.dumps(GOOD | {"text": "长" * 20_000}).encode(), 413, "exceeded"),
    ("an unknown reply target", json.dumps(GOOD | {"reply_to": "nope-1"}).encode(), 400, "no message"),
    ("a group used as private", json.dumps(GOOD | {"chat_kind": "private"}).encode(), 409, "group chat"),
    ("forwarded not a boolean", json.dumps(GOOD | {"forwarded": "yes"}).encode(), 400, "true or false"),
    (
        # Its echo is cut between whole graphemes: a code-point cut left half the emoji family.
        "a long unknown field",
        json.dumps(GOOD | {"k" * 197 + "\U0001f468\u200d\U0001f469\u200d\U0001f467": 1}).encode(),
        400,
        "unknown fields " + "k" * 197 + "…; the fields are",
    ),
]


@pytest.mark.parametrize(
    ("body", "status", "error"), [case[1:] for case in BAD_BODIES], ids=[case[0] for case in BAD_BODIES]
)
async def test_a_bad_post_gets_a_json_error_and_changes_nothing(
    playground: Playground, inbox: Inbox, body: bytes, status: int, error: str
) -> None:
    assert (await playground.post(**GOOD))[0] == 200
    before = await playground.transcript("g1")
    got, answer = await playground.call(
        "POST", "/api/messages", data=body, headers={"Content-Type": "application/json"}
    )
    assert got == status and error in answer["error"], answer
    assert answer.get("chat_kind") == ("group" if status == 409 else None), "a 409 names the chat's kind"
    assert len(inbox.events) == 1 and await playground.transcript("g1") == before
    assert (await playground.post(**GOOD))[0] == 200, "the playground goes on"
    assert len(inbox.events) == 2


async def test_names_sharing_their_start_are_refused_past_the_limit_not_made_one_member(
    playground: Playground, inbox: Inbox
) -> None:
    start = "小" * 20 + "👨‍👩‍👧‍👦"  # 27 code points
    for name in (start + "阿红同学呀啊", start + "阿红同桌呀啊", start + "👨‍👩‍👧‍👦"):  # 33, 33, 34
        status, body = await playground.post(chat_id="g1", user=name, text="hi")
        assert status == 400 and "over the limit of 32" in body["error"], body
    assert inbox.events == [] and await playground.transcript("g1") == []
    at_limit = [start + "阿红同学x", start + "阿红同桌x"]  # 32 each
    for name in at_limit:
        assert (await playground.post(chat_id="g1", user=name, text="hi"))[0] == 200
    senders = [(e.sender_name, e.sender_id) for e in inbox.events]  # type: ignore[union-attr]
    assert [name for name, _ in senders] == at_limit and senders[0][1] != senders[1][1]


async def test_unknown_routes_and_methods_answer_json_errors(playground: Playground) -> None:
    status, body = await playground.call("GET", "/api/nothing")
    assert status == 404 and "error" in body
    status, body = await playground.call("DELETE", "/api/messages")
    assert status == 405 and "error" in body
    status, body = await playground.call("GET", "/api/chats/g1/messages?after=-1")
    assert status == 400 and "after" in body["error"]


async def test_a_handler_that_fails_is_told_and_the_next_post_is_handled() -> None:
    calls: list[InboundEvent] = []

    async def failing(event: InboundEvent) -> None:
        calls.append(event)
        if len(calls) == 1:
            raise RuntimeError("boom")

    running = await started(make_adapter(), failing)
    try:
        status, body = await running.post(**GOOD)
        assert status == 500 and "log" in body["error"] and body["message"]["text"] == "hi"
        assert (await running.post(**GOOD))[0] == 200 and len(calls) == 2
    finally:
        await running.session.close()
        await running.adapter.stop()


async def test_a_failure_of_the_playground_itself_is_a_json_500_and_the_next_call_is_served(
    playground: Playground, inbox: Inbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object) -> None:
        raise RuntimeError("transcript broken")

    assert (await playground.post(**GOOD))[0] == 200
    for name in ("after", "add"):
        monkeypatch.setattr(playground.adapter.transcripts, name, broken)
    status, body = await playground.call("GET", "/api/chats/g1/messages?after=0")
    assert status == 500 and "failed" in body["error"] and "RuntimeError" in body["error"], body
    status, body = await playground.post(**GOOD)
    assert status == 500 and "failed" in body["error"], body
    assert len(inbox.events) == 1, "a message that could not be shown is not handed on either"
    monkeypatch.undo()
    assert [m["text"] for m in await playground.transcript("g1")] == ["hi"]
    assert (await playground.post(**GOOD))[0] == 200 and len(inbox.events) == 2


async def test_the_transcript_of_a_chat_stays_bounded() -> None:
    running = await started(make_adapter(keep_messages=3), Inbox())
    try:
        for n in range(5):
            assert (await running.post(chat_id="g1", user="alice", text=f"m{n}"))[0] == 200
        status, page = await running.call("GET", "/api/chats/g1/messages?after=0")
        assert status == 200 and page["missed"]
        assert [m["text"] for m in page["messages"]] == ["m2", "m3", "m4"]
    finally:
        await running.session.close()
        await running.adapter.stop()


async def test_stop_lets_the_message_being_handled_finish_and_refuses_new_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The grace is the adapter's own (InFlight): the server's shutdown timeout, here none, would
    cancel the handler at once."""
    monkeypatch.setattr(playground_adapter, "_SHUTDOWN_SECONDS", 0.0)
    held = HeldHandler()
    adapter = make_adapter()

    async def answering(event: InboundEvent) -> None:
        await held(event)
        assert isinstance(event, ChatMessage)
        await adapter.send_text(event.chat_id, "收到", reply_to=event.message_id)

    running = await started(adapter, answering)
    other = aiohttp.ClientSession()
    try:
        # two connections kept alive: the first post takes one, the post made while stopping the other
        await asyncio.gather(running.call("GET", "/api/chats"), running.call("GET", "/api/chats"))
        first = asyncio.create_task(running.post(chat_id="g1", user="alice", text="first"))
        await asyncio.wait_for(held.started.wait(), WAIT)
        stopping = asyncio.create_task(adapter.stop())
        await stop_waits(stopping, adapter._in_flight.draining)  # posts refused, the listener closed
        status, refused = await asyncio.wait_for(running.post(chat_id="g1", user="bob", text="second"), WAIT)
        assert status == 503 and "stopping" in refused["error"]
        with pytest.raises(aiohttp.ClientConnectionError):
            await other.post(running.base + "/api/messages", json=GOOD)
        assert not stopping.done(), "stop waits for the message being handled"
        held.release.set()
        status, body = await asyncio.wait_for(first, WAIT)
        await asyncio.wait_for(stopping, WAIT)
    finally:
        await other.close()
        await running.session.close()
    assert status == 200 and held.message_ids() == [body["message"]["id"]]
    texts = [e.message.text for e in adapter.transcripts.after("g1", 0).entries]
    assert texts == ["first", "收到"], "the answer given while stopping is in the transcript"


async def test_a_member_edits_and_deletes_their_message_and_the_bot_and_a_reader_learn_of_it(
    playground: Playground, inbox: Inbox
) -> None:
    first = (await playground.post(chat_id="g1", user="alice", text="周六去爬山"))[1]["message"]
    second = (await playground.post(chat_id="g1", user="alice", text="发错群了"))[1]["message"]
    path = f"/api/chats/g1/messages/{first['id']}"
    status, body = await playground.call("PATCH", path, json={"user": "alice", "text": "周日去爬山"})
    assert status == 200 and body["message"]["edited"] and body["message"]["text"] == "周日去爬山"
    assert body["message"]["id"] == first["id"] and body["message"]["seq"] > second["seq"]
    status, body = await playground.call(
        "DELETE", f"/api/chats/g1/messages/{second['id']}", json={"user": "alice"}
    )
    assert status == 200 and body == {"deleted": second["id"]}
    edit, deletion = inbox.events[2:]
    assert isinstance(edit, ChatMessage) and edit.edited and edit.message_id == first["id"]
    assert edit.text == "周日去爬山" and edit.time.isoformat() == first["time"], "the first send time stays"
    assert deletion == MessageDeletion("playground", "g1", second["id"], ChatKind.GROUP)
    status, page = await playground.call("GET", f"/api/chats/g1/messages?after={second['seq']}")
    assert [(m["id"], m["text"], m["edited"]) for m in page["messages"]] == [
        (first["id"], "周日去爬山", True)
    ]
    assert page["deleted"] == [second["id"]] and page["cursor"] > page["messages"][0]["seq"]
    assert [m["text"] for m in await playground.transcript("g1")] == ["周日去爬山"]


async def test_only_the_sender_may_change_a_message_and_a_bad_change_changes_nothing(
    playground: Playground, inbox: Inbox
) -> None:
    mine = (await playground.post(chat_id="g1", user="alice", text="原话"))[1]["message"]
    bots = await playground.adapter.send_text("g1", "机器人说的")
    other_chat = (await playground.post(chat_id="g2", user="alice", text="二群"))[1]["message"]
    at = "/api/chats/g1/messages/"
    cases: list[tuple[str, str, Any, int, str]] = [
        ("PATCH", at + mine["id"], {"user": "bob", "text": "改"}, 403, "only they may"),
        ("DELETE", at + mine["id"], {"user": "Alice"}, 403, "only they may"),
        ("PATCH", at + bots.message_id, {"user": "群忆", "text": "改"}, 403, "bot's messages"),
        ("DELETE", at + bots.message_id, {"user": "alice"}, 403, "bot's messages"),
        ("PATCH", at + "nope-1", {"user": "alice", "text": "改"}, 404, "no message"),
        ("DELETE", at + other_chat["id"], {"user": "alice"}, 404, "no message"),
        ("DELETE", f"/api/chats/g9/messages/{mine['id']}", {"user": "alice"}, 404, "no message"),
        ("PATCH", at + mine["id"], {"user": "alice", "text": " "}, 400, "text must not be empty"),
        ("PATCH", at + mine["id"], {"user": "alice"}, 400, "text is missing"),
        ("DELETE", at + mine["id"], {"user": "alice", "text": "x"}, 400, "unknown fields text"),
        ("DELETE", at + mine["id"], None, 400, "body is empty"),
        ("DELETE", at + mine["id"], {"user": "a" * 33}, 400, "over the limit"),
    ]
    for method, path, body, status, error in cases:
        got, answer = await playground.call(method, path, data=json.dumps(body) if body else b"")
        assert got == status and error in answer["error"], (method, path, body, answer)
    assert len(inbox.events) == 2, "nothing reached the bot"
    assert [m["text"] for m in await playground.transcript("g1")] == ["原话", "机器人说的"]
    assert (await playground.call("GET", "/api/chats/g1/messages?after=0"))[1]["deleted"] == []
    for token in (None, "wrong"):
        got, _ = await playground.call("DELETE", at + mine["id"], token=token, json={"user": "alice"})
        assert got == 401


async def test_the_icon_browsers_ask_for_is_served_without_the_token_and_cached(
    playground: Playground,
) -> None:
    """Browsers ask every site for /favicon.ico: the playground answered it with a JSON 404."""
    async with playground.session.get(playground.base + "/favicon.ico") as icon:
        assert icon.status == 200 and icon.content_type == "image/svg+xml"
        assert icon.headers["Cache-Control"] == "public, max-age=86400"
        assert (await icon.text()).startswith("<svg xmlns=")
    async with playground.session.get(playground.base + "/page.js") as script:
        assert script.headers["Cache-Control"] == "no-store", "the page itself is still never cached"
