"""The handler `qunyi run` gives each live adapter: its events go into the reply pipeline."""

from __future__ import annotations

import asyncio
import logging

from adapters.base import Adapter, MessageHandler
from bot.app import App
from bot.chat_moves import follow_chat_move
from memory.storage import DatabaseWriteFailed
from memory.types import ChatMoved, InboundEvent

log = logging.getLogger(__name__)


def inbound_handler(app: App, adapter: Adapter, stop: asyncio.Event) -> MessageHandler:
    """What `adapter` hands its events to: a chat move is followed, a message or a deletion goes
    through the pipeline (which waits out a locked database until `stop`). A failure is logged and the
    adapter goes on, except for an adapter that `reports_failures` (it tells the sender and logs it):
    to that one it is raised."""

    async def on_message(event: InboundEvent) -> None:
        try:
            if isinstance(event, ChatMoved):
                await follow_chat_move(app, event, stop)
            else:
                await app.pipeline.handle_inbound(event, adapter.send_text, stop)
        except Exception as exc:
            if adapter.reports_failures:
                raise
            if isinstance(exc, DatabaseWriteFailed):  # the machine's trouble: one line, not a traceback each
                log.error("a %s event was not applied: %s", adapter.platform, exc)
            else:
                log.exception("handling a %s event failed", adapter.platform)

    return on_message
