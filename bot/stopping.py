"""Stopping `qunyi run` on one budget: the answers under way, the events the adapters are handling and
the running jobs all get their graces at once, counted from the stop, not one grace after another."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import timedelta

from adapters.base import STOP_GRACE_SECONDS, Adapter
from bot.app import App
from bot.responding import Responses

log = logging.getLogger(__name__)


async def stop_serving(app: App, responses: Responses, adapters: Sequence[Adapter]) -> None:
    """Stop the jobs, the answers and the adapters together: the jobs get `[scheduler]
    shutdown_grace_seconds` from now, the answers and the adapters' events STOP_GRACE_SECONDS from now
    (the adapters whatever the answers left of it: they close their connections only after the
    answers, which still go out through them). So the whole stop takes about the longer grace, plus
    the time the adapters take to close."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STOP_GRACE_SECONDS
    jobs = asyncio.create_task(
        app.runner.shutdown(timedelta(seconds=app.settings.scheduler.shutdown_grace_seconds))
    )
    try:
        await responses.stop(STOP_GRACE_SECONDS)
        left = max(0.0, deadline - loop.time())
        stopped = await asyncio.gather(
            *(adapter.stop(within=left) for adapter in adapters), return_exceptions=True
        )
        for adapter, outcome in zip(adapters, stopped, strict=True):
            if isinstance(outcome, Exception):
                log.debug("stopping the %s adapter failed", adapter.platform, exc_info=outcome)
    finally:
        await jobs
