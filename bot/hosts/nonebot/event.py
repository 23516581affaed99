"""nonebot's OneBot v11 events and API calls back in the OneBot JSON shape, for adapters.onebot_v11 to read.

nonebot parses each event into a model that keeps every field the implementation sent (its models
allow extra keys), but edits its `message`: the leading `@bot`, the reply segment and the bot's
nickname are cut out. The message as it came is its `original_message`, which takes its place here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from nonebot.adapters import MessageSegment
from nonebot.compat import model_dump
from pydantic import BaseModel

from adapters.onebot_v11.message import text_segment

FORWARD_ACTIONS = ("send_forward_msg", "send_group_forward_msg", "send_private_forward_msg")
"""The API calls that send a merged forward of messages (nodes): the chat sees one message holding a
`forward` segment, as when a member forwards; they answer with its `message_id`, and the forward's id
as `forward_id` (go-cqhttp, LLOneBot) or `res_id` (NapCat)."""

SEND_ACTIONS = ("send_msg", "send_group_msg", "send_private_msg", *FORWARD_ACTIONS)
"""The API calls that send a message (and answer with its `message_id`)."""


def event_data(event: BaseModel) -> dict[str, Any]:
    """A nonebot OneBot v11 event (or a `get_msg` answer nonebot made a model of) as the implementation
    sent it."""
    data = model_dump(event)
    if "original_message" in data:
        data["message"] = data.pop("original_message")
    for added in ("to_me", "reply"):  # nonebot's own fields
        data.pop(added, None)
    return data


def sent_event(
    api: str, params: Mapping[str, Any], answer: Any, *, account: str, nickname: str, time: float
) -> dict[str, Any] | None:
    """The `message_sent` event for what the bot's `account` sent at `time` (unix seconds) by an API
    call `api` with `params` that answered `answer`; None for a call that sent no message, or whose
    answer names none."""
    if api not in SEND_ACTIONS or not isinstance(answer, Mapping) or answer.get("message_id") is None:
        return None
    group = params.get("group_id")
    kind = params.get("message_type") or ("group" if group is not None else "private")
    data: dict[str, Any] = {
        "post_type": "message_sent",
        "message_type": kind,
        "message_id": answer["message_id"],
        "self_id": account,
        "user_id": account,
        "time": time,
        "message": (
            [_forward_segment(answer)]
            if api in FORWARD_ACTIONS
            else raw_message(params.get("message"), auto_escape=bool(params.get("auto_escape")))
        ),
        "sender": {"user_id": account, "nickname": nickname},
    }
    if kind == "group":
        data["group_id"] = group
    else:
        data["target_id"] = params.get("user_id")
    return data


def _forward_segment(answer: Mapping[str, Any]) -> dict[str, Any]:
    """The `forward` segment of a merged forward the bot sent, as the chat's members receive it (read as
    a member's forward is: `[forward]`), with the forward's id when the answer names it."""
    forward_id = answer.get("forward_id") or answer.get("res_id")
    return {"type": "forward", "data": {} if forward_id is None else {"id": str(forward_id)}}


def raw_message(message: Any, *, auto_escape: bool = False) -> Any:
    """A message as an API call was given it, in the OneBot JSON shape: nonebot's `Message` or
    `MessageSegment` as a segment array; a string as CQ code, or as plain text with `auto_escape`."""
    if isinstance(message, str):
        return [text_segment(message)] if auto_escape else message
    if isinstance(message, MessageSegment):
        return [asdict(message)]
    if isinstance(message, list | tuple):
        return [asdict(seg) if isinstance(seg, MessageSegment) else seg for seg in message]
    return message
