"""A member's edit or deletion of their own message on the page: the checked request and the edited
neutral message memory gets (`ChatMessage.edited`, as a platform's edit is delivered).

An edit is `{"user", "text"}`, a deletion `{"user"}`; `user` names the member making the change, who
must be the message's sender (the adapter checks that against the message).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from adapters.playground.event import (
    decode_body,
    json_object,
    message_text,
    typed_mentions,
    user_name,
)
from memory.types import ChatMessage, SegmentKind

EDIT_FIELDS = ("user", "text")
DELETE_FIELDS = ("user",)


@dataclass(frozen=True, slots=True)
class Change:
    """An edit to `text`, or a deletion (`text` None), asked for by member `user`, checked."""

    user: str
    text: str | None = None


def read_change(body: bytes, *, max_name_chars: int, edit: bool) -> Change:
    """The edit (`edit`) or deletion in a request body (UTF-8 JSON); raises BadPost saying what is
    wrong with it."""
    data = json_object(decode_body(body), EDIT_FIELDS if edit else DELETE_FIELDS)
    user = user_name(data, max_name_chars=max_name_chars)
    return Change(user, message_text(data) if edit else None)


def edited_message(
    original: ChatMessage, text: str, *, members: Mapping[str, str], bot_id: str, bot_name: str
) -> ChatMessage:
    """`original` edited to `text`: its id, sender, first send time and reply (with its quote) stay;
    its @-mentions are read again from the new text (`members` as in `to_chat_message`); marked
    `edited`, so memory replaces the stored version and never answers it. It stays addressed to the
    bot when it was when sent, and a forward when it was one (its @s then mention no one)."""
    body, targets = typed_mentions(
        text, members, bot_id=bot_id, bot_name=bot_name, forwarded=original.forwarded
    )
    reply = tuple(s for s in original.segments if s.kind is SegmentKind.REPLY)
    return replace(
        original,
        text=text,
        mentions=targets,
        segments=(*reply, *body),
        to_bot=original.to_bot or bot_id in targets,
        edited=True,
    )
