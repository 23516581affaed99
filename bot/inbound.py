"""The handler `qunyi run` gives each live adapter: its events go into the reply pipeline."""

from __future__ import annotations

import asyncio
import functools
import logging

from adapters.base import Adapter, MessageHandler
from bot.app import App
from bot.chat_moves import follow_chat_move
from bot.reply.pipeline import Pending
from bot.responding import Responses
from memory.storage import DatabaseWriteFailed
from memory.types import ChatMessage, ChatMoved, InboundEvent

log = logging.getLogger(__name__)


def inbound_handler(
    app: App, adapter: Adapter, stop: asyncio.Event, responses: Responses | None = None
) -> MessageHandler:
    """What `adapter` hands its events to: a chat move is followed, a message or a deletion goes
    through the pipeline (which waits out a locked database until `stop`). With `responses`, a message
    is only recorded before the handler returns, and the bot's answer to it runs there, so that the
    adapter's next event is not held up by it; an adapter that `reports_failures` has its answer
    awaited. A failure is logged and the adapter goes on, except for an adapter that `reports_failures`
    (it tells the sender and logs it): to that one it is raised."""
    later = None if adapter.reports_failures else responses

    def logged(exc: Exception) -> None:
        if isinstance(exc, DatabaseWriteFailed):  # the machine's trouble: one line, not a traceback each
            log.error("a %s event was not applied: %s", adapter.platform, exc)
        else:
            log.error("handling a %s event failed", adapter.platform, exc_info=exc)

    async def answer(pending: Pending) -> None:
        try:
            await pending.respond()
        except Exception as exc:
            logged(exc)

    async def on_message(event: InboundEvent) -> None:
        try:
            if isinstance(event, ChatMoved):
                await follow_chat_move(app, event, stop)
            elif later is not None and isinstance(event, ChatMessage):
                pending = await app.pipeline.record_live(event, adapter.send_text, stop)
                if isinstance(pending, Pending) and not later.start(
                    pending.chat_id, functools.partial(answer, pending)
                ):
                    log.info(
                        "message %s of %s recorded, not answered: the bot is stopping",
                        event.message_id,
                        event.chat_id,
                    )
            else:
                await app.pipeline.handle_inbound(event, adapter.send_text, stop)
        except Exception as exc:
            if adapter.reports_failures:
                raise
            logged(exc)

    return on_message
