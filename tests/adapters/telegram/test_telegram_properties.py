"""Property tests: any update Telegram could post is refused by aiogram's validation or by the neutral
message (InvalidMessage), each skipped with a warning, or converts to a neutral message (or None for a
service message)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from memory.types import InvalidMessage

pytest.importorskip("aiogram", reason="the telegram extra is not installed")

from aiogram.types import Update

from adapters.telegram.convert import message_to_chat
from memory.types import ChatMessage
from tests.fuzzing import fixture_json, json_values, mutated

UPDATES = fixture_json("telegram/updates.json")
updates = st.one_of(json_values, st.sampled_from(UPDATES).flatmap(lambda update: mutated(update, 4)))


@given(updates)
@example({"update_id": 1, "message": UPDATES[0]["message"] | {"date": -1}})
def test_an_update_is_refused_by_validation_or_converts(data: Any) -> None:
    try:
        update = Update.model_validate(data)
    except ValidationError:
        return
    for message in (update.message, update.edited_message):
        if message is not None:
            try:
                converted = message_to_chat(message, bot_id=999, bot_username="qunyi_bot")
            except InvalidMessage as exc:
                assert str(exc)
                continue
            assert converted is None or isinstance(converted, ChatMessage)
