"""Property tests: any JSON a OneBot implementation sends gives a neutral message or InvalidMessage."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from adapters.onebot_v11.event import MessageEvent, MetaEvent, recall_notice, to_chat_message
from adapters.onebot_v11.message import parse_cq, to_cq, to_neutral
from memory.types import ChatMessage, InvalidMessage, MessageDeletion
from tests.fuzzing import fixture_json, json_values, mutated, texts

MESSAGE_FIXTURES = [
    "group_message_array.json",
    "group_message_cq.json",
    "group_message_reply.json",
    "private_message.json",
    "get_msg_bot_message.json",
]
events = st.one_of(
    json_values,
    st.sampled_from(MESSAGE_FIXTURES).flatmap(lambda name: mutated(fixture_json(f"onebot_v11/{name}"))),
)


def neutral_message(data: Any) -> ChatMessage | None:
    """What the adapter makes of a message event: the message, or None when it is skipped (it skips
    an event on InvalidMessage, from reading it or from making the neutral message)."""
    try:
        return to_chat_message(MessageEvent.from_dict(data), self_id="10001")
    except InvalidMessage:
        return None


@pytest.mark.parametrize("name", MESSAGE_FIXTURES)
def test_the_fixtures_themselves_are_messages(name: str) -> None:
    assert isinstance(neutral_message(fixture_json(f"onebot_v11/{name}")), ChatMessage)


@given(events)
@example(fixture_json("onebot_v11/group_message_array.json") | {"time": -1})
def test_a_message_event_is_a_message_or_refused_with_invalid_message(data: Any) -> None:
    message = neutral_message(data)
    assert message is None or (message.chat_id and message.message_id)


@given(st.one_of(json_values, mutated(fixture_json("onebot_v11/group_recall.json"))))
def test_a_notice_is_a_deletion_none_or_invalid_message(data: Any) -> None:
    try:
        found = recall_notice(data) if isinstance(data, dict) else None
    except InvalidMessage:
        return
    assert found is None or isinstance(found, MessageDeletion)


@given(st.one_of(json_values, mutated(fixture_json("onebot_v11/heartbeat.json"))))
def test_a_meta_event_always_reads(data: Any) -> None:
    if isinstance(data, dict):
        meta = MetaEvent.from_dict(data)
        assert meta.interval_ms is None or 0 <= meta.interval_ms <= 86_400_000


@given(st.lists(st.one_of(texts, st.sampled_from(["[CQ:", "[CQ:at,qq=1]", ",", "=", "&#91;", "]"]))))
def test_any_cq_string_converts_and_its_text_comes_back(parts: list[str]) -> None:
    message = "".join(parts)
    segments = parse_cq(message)
    assert parse_cq(to_cq(segments)) == segments
    to_neutral(message)
