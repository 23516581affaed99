"""Property tests: any body posted to the playground is a post or BadPost, and a post is a neutral
message or InvalidMessage (both answered 400 with the reason)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from adapters.playground.changes import edited_message, read_change
from adapters.playground.event import BadPost, read_post, to_chat_message
from memory.types import InvalidMessage
from tests.conftest import T0, make_message
from tests.fuzzing import fixture_json, json_values, mutated, texts

POSTS = [case["body"] for case in fixture_json("playground/posts.json")["converted"]]
bodies = st.one_of(
    st.binary(max_size=100),
    json_values.map(lambda value: json.dumps(value).encode()),
    st.sampled_from(POSTS).flatmap(mutated).map(lambda value: json.dumps(value).encode()),
)
MEMBERS = {"alice": "pg-a", "小红": "pg-b", "": "pg-c"}


@given(bodies)
def test_a_posted_body_is_a_message_or_refused_saying_why(body: bytes) -> None:
    try:
        post = read_post(body, max_name_chars=32)
        message = to_chat_message(
            post, message_id="p1", time=T0, bot_id="bot", bot_name="群忆", members=MEMBERS
        )
    except (BadPost, InvalidMessage) as exc:
        assert str(exc)
        return
    assert message.text == post.text and message.sender_name == post.user


@given(bodies, st.booleans(), texts)
def test_an_edit_or_deletion_is_read_or_refused_saying_why(body: bytes, edit: bool, text: str) -> None:
    try:
        change = read_change(body, max_name_chars=32, edit=edit)
        if change.text is not None:
            edited_message(
                make_message(1, text=text or "x"), change.text, members=MEMBERS, bot_id="bot", bot_name="群忆"
            )
    except (BadPost, InvalidMessage) as exc:
        assert str(exc)
