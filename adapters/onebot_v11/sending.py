"""Sending the bot's text through OneBot v11: the action that sends it, and the message it sent.

Shared by Qunyi's own adapter (adapter.py) and the nonebot2 plugin (bot/hosts/nonebot), which call the
action through their own connections.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from adapters.base import SendError
from adapters.onebot_v11.event import PLATFORM, private_chat_id, private_peer
from adapters.onebot_v11.message import RawSegment, maybe_int, reply_segment, text_segment
from memory.types import ChatKind, ChatMessage, Segment, SegmentKind


def chat_to_send_to(chat_id: str, chat_kind: ChatKind) -> str:
    """The chat id `chat_id` names, as the adapter records it: a private chat named by a bare QQ number
    is `private-<QQ>`. SendError for a channel, which OneBot v11 has not."""
    if chat_kind is ChatKind.CHANNEL:
        raise SendError("OneBot v11 has no channel chats; use group or private")
    return private_chat_id(private_peer(chat_id)) if chat_kind is ChatKind.PRIVATE else chat_id


def send_action(
    chat_id: str, text: str, *, chat_kind: ChatKind, reply_to: str | None, temp_group: str | None
) -> tuple[str, dict[str, Any]]:
    """The action and its params that send `text` literally (no CQ code in it is read) to the group
    or private chat `chat_id` (as `chat_to_send_to` gives it), as an answer to message `reply_to`. A
    temporary session is opened through the group it came through, `temp_group`."""
    message: list[RawSegment] = [reply_segment(reply_to)] if reply_to else []
    message.append(text_segment(text))
    if chat_kind is ChatKind.GROUP:
        return "send_group_msg", {"group_id": maybe_int(chat_id), "message": message}
    params: dict[str, Any] = {"user_id": maybe_int(private_peer(chat_id)), "message": message}
    if temp_group is not None:  # go-cqhttp (send_private_msg group_id) opens the temporary session by it
        params["group_id"] = maybe_int(temp_group)
    return "send_private_msg", params


def sent_message(
    action: str,
    answer: Any,
    chat_id: str,
    text: str,
    *,
    chat_kind: ChatKind,
    reply_to: str | None,
    account: str,
    nickname: str,
    time: datetime,
) -> ChatMessage:
    """The message the bot's `account` (named `nickname`) sent at `time` by `send_action`, which
    answered `answer`; SendError when the answer names no message id."""
    message_id = answer.get("message_id") if isinstance(answer, Mapping) else None
    if message_id is None or isinstance(message_id, bool):
        raise SendError(f"{action} returned no message_id: {answer!r}")
    segments = ((Segment(SegmentKind.REPLY, "", reply_to),) if reply_to else ()) + (
        Segment(SegmentKind.TEXT, text),
    )
    return ChatMessage(
        platform=PLATFORM,
        chat_id=chat_id,
        message_id=str(message_id),
        sender_id=account,
        text=text,
        time=time,
        sender_name=nickname,
        chat_kind=chat_kind,
        reply_to=reply_to,
        segments=segments,
        is_bot=True,
    )
