"""What the page posts, as JSON fixtures, becomes a neutral ChatMessage or a clear refusal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.playground.event import BadPost, read_post, sender_id, to_chat_message
from memory.types import ChatKind, ChatMessage
from tests.conftest import T0

FIXTURES = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures" / "playground" / "posts.json").read_text("utf-8")
)
NAME_CHARS = 12


def _body(case: dict[str, Any]) -> bytes:
    if "raw_hex" in case:
        return bytes.fromhex(case["raw_hex"])
    if "raw_repeat" in case:
        text, times = case["raw_repeat"]
        return (text * times).encode()
    if "raw" in case:
        return str(case["raw"]).encode()
    return json.dumps(case["body"]).encode()


def _convert(body: bytes, quoted: ChatMessage | None = None) -> ChatMessage:
    post = read_post(body, max_name_chars=NAME_CHARS)
    return to_chat_message(post, message_id="run-9", time=T0, bot_id="bot", bot_name="群忆", quoted=quoted)


@pytest.mark.parametrize("case", FIXTURES["converted"], ids=lambda case: case["name"])
def test_a_post_becomes_a_chat_message(case: dict[str, Any]) -> None:
    message = _convert(_body(case))
    seen = {
        "chat_id": message.chat_id,
        "chat_kind": message.chat_kind.value,
        "sender_name": message.sender_name,
        "text": message.text,
        "to_bot": message.to_bot,
        "mentions": list(message.mentions),
        "reply_to": message.reply_to,
        "segments": [[s.kind.value, s.text, s.target] for s in message.segments],
        "forwarded": message.forwarded,
    }
    assert {key: seen[key] for key in case["expect"]} == case["expect"]
    assert (message.platform, message.message_id, message.time) == ("playground", "run-9", T0)
    assert message.sender_id == sender_id(message.sender_name) and not message.is_bot


@pytest.mark.parametrize("case", FIXTURES["refused"], ids=lambda case: case["name"])
def test_a_bad_post_is_refused_saying_why(case: dict[str, Any]) -> None:
    with pytest.raises(BadPost, match=case["error"]):
        read_post(_body(case), max_name_chars=NAME_CHARS)


def test_the_sender_id_is_stable_per_name_and_apart_between_names() -> None:
    assert sender_id("alice") == sender_id("alice") != sender_id("Alice")
    assert sender_id("alice").startswith("pg-")
    composed = _convert(json.dumps({"chat_id": "g1", "user": "Zoë", "text": "x"}).encode())
    decomposed = _convert(json.dumps({"chat_id": "g1", "user": "Zoe\u0308", "text": "x"}).encode())
    assert composed.sender_id == decomposed.sender_id, "the same name however it is encoded"


def test_a_reply_to_the_bot_addresses_it_and_quotes_it() -> None:
    bot_said = ChatMessage.outgoing("playground", "g1", "run-1", "bot", "群忆", "周五晚上开炉", T0)
    member_said = ChatMessage(
        platform="playground", chat_id="g1", message_id="run-2", sender_id="pg-1", text="好", time=T0
    )
    body = json.dumps({"chat_id": "g1", "user": "alice", "text": "几点", "reply_to": "run-1"}).encode()
    to_bot = _convert(body, quoted=bot_said)
    to_member = _convert(body.replace(b"run-1", b"run-2"), quoted=member_said)
    assert to_bot.to_bot and to_bot.segments[0].text == "周五晚上开炉"
    assert not to_member.to_bot and to_member.chat_kind is ChatKind.GROUP


def test_an_at_of_a_member_of_the_chat_is_a_mention_segment_of_their_sender_id() -> None:
    post = read_post(
        json.dumps({"chat_id": "g1", "user": "alice", "text": "@bob 和 ＠群忆 看看 @carol"}).encode(),
        max_name_chars=NAME_CHARS,
    )
    members = {"bob": sender_id("bob"), "alice": sender_id("alice")}
    message = to_chat_message(
        post, message_id="run-9", time=T0, bot_id="bot", bot_name="群忆", members=members
    )
    assert [(s.kind.value, s.text, s.target) for s in message.segments] == [
        ("mention", "@bob", sender_id("bob")),
        ("text", " 和 ", None),
        ("mention", "＠群忆", "bot"),
        ("text", " 看看 @carol", None),
    ]
    assert message.mentions == (sender_id("bob"), "bot") and message.to_bot
    assert "".join(s.text for s in message.segments) == message.text
