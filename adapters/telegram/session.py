"""The adapter's Bot API session: aiogram's aiohttp session, reading each polled update on its own.

aiogram validates a whole `getUpdates` answer at once, so one update it cannot read (a field of the wrong
type from a self-hosted Bot API server, or a newer API than the installed aiogram knows) fails the batch,
and polling retries the same batch for ever: every message behind it is lost. Here an unreadable update
is logged and replaced by its bare `update_id`, which no handler takes, so the offset moves past it.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.methods import GetUpdates
from aiogram.types import Update
from pydantic import ValidationError

from memory import untrusted_json

if TYPE_CHECKING:
    from aiogram import Bot
    from aiogram.methods import Response, TelegramMethod
    from aiogram.methods.base import TelegramType

log = logging.getLogger(__name__)


class TolerantSession(AiohttpSession):
    """`AiohttpSession` whose `getUpdates` answers skip the updates that cannot be read."""

    def check_response(
        self, bot: Bot, method: TelegramMethod[TelegramType], status_code: int, content: str
    ) -> Response[TelegramType]:
        if isinstance(method, GetUpdates):
            content = readable_updates(content)
        return super().check_response(bot, method, status_code, content)


def readable_updates(content: str) -> str:
    """A `getUpdates` answer with each unreadable update replaced by its bare id (dropped without one)."""
    try:
        answer = untrusted_json.loads(content)
    except json.JSONDecodeError:
        return content  # aiogram reports the answer itself
    if not isinstance(answer, dict) or not isinstance(answer.get("result"), list):
        return content
    kept: list[Any] = []
    for raw in answer["result"]:
        try:
            Update.model_validate(raw)
        except ValidationError as exc:
            update_id = log_unreadable(raw, exc)
            if isinstance(update_id, int) and not isinstance(update_id, bool):
                kept.append({"update_id": update_id})
            continue
        kept.append(raw)
    return json.dumps({**answer, "result": kept}, ensure_ascii=False)


def log_unreadable(raw: Any, exc: ValidationError) -> Any:
    """Log that the update `raw` is skipped as unreadable (`exc`); returns its `update_id`, if any."""
    update_id = raw.get("update_id") if isinstance(raw, dict) else None
    log.warning("Telegram update %s skipped: it cannot be read: %s", update_id, _first_error(exc))
    return update_id


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    return f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
