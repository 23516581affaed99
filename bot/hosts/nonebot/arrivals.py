"""A chat's events recorded in the order they came to nonebot's OneBot v11 bots.

nonebot handles each event in a task of its own, and its OneBot v11 Bot looks up the message a reply
answers (`get_msg`, a round trip to the implementation) before any plugin sees it: the message after a
reply, which needs no lookup, reached Qunyi's matcher first. No hook of nonebot's comes before that
lookup, so `follow_arrivals` wraps the Bot's `handle_event`: each event takes its place in its chat's
line as it arrives, and Qunyi's matcher waits for that place (`in_turn`). The other plugins' handling
waits for nothing."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from typing import Any

from nonebot.adapters.onebot.v11 import Bot

from adapters.host import ArrivalOrder, Place

_ORDER = ArrivalOrder()
_PLACE: contextvars.ContextVar[Place | None] = contextvars.ContextVar("qunyi_nonebot_place", default=None)
_WRAPPED = "__qunyi_in_arrival_order__"
_TAKEN = ("message", "message_sent", "notice")  # the post types of Qunyi's matchers


def follow_arrivals() -> None:
    """Make every OneBot v11 Bot of the process take each event's place in its chat's line before it
    handles the event (once, whatever the number of calls). A place Qunyi's matcher did not take up (a
    matcher of a higher priority blocked the event) is left when nonebot is done with the event."""
    handle: Callable[[Bot, Any], Awaitable[None]] = Bot.handle_event
    if getattr(handle, _WRAPPED, False):
        return

    async def handle_event(self: Bot, event: Any) -> None:
        key = _chat_of(event)
        place = None if key is None else _ORDER.place(key)
        token = _PLACE.set(place)
        try:
            await handle(self, event)
        finally:
            _PLACE.reset(token)
            if place is not None:
                place.leave()

    setattr(handle_event, _WRAPPED, True)
    Bot.handle_event = handle_event  # type: ignore[method-assign]


@contextlib.asynccontextmanager
async def in_turn() -> AsyncIterator[None]:
    """In a matcher: wait until the events of this event's chat that came before it are done, and be
    done with this one after the block. Outside an event of a wrapped Bot: no wait."""
    place = _PLACE.get()
    if place is None:
        yield
        return
    async with place.taken_up():
        yield


def _chat_of(event: Any) -> Hashable | None:
    """The chat of a OneBot event Qunyi's matchers take (a message, the bot's own, a notice): its group,
    else the other side of a private chat (the user, or the `target_id` of the bot's own message); None
    for the others (a request, a heartbeat), which would hold their chat's line until every plugin is
    done with them."""
    if getattr(event, "post_type", None) not in _TAKEN:
        return None
    group = getattr(event, "group_id", None)
    if group is not None:
        return ("group", str(group))
    user = getattr(event, "target_id", None) or getattr(event, "user_id", None)
    return None if user is None else ("private", str(user))
