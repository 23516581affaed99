"""How Qunyi sends a text through an aiogram `Bot`: for the Telegram adapter's own Bot and for the Bot of
an aiogram program that embeds Qunyi (bot.hosts.aiogram). aiogram is imported when it sends.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from adapters.base import SendError, fit_message
from adapters.telegram.convert import message_to_chat
from memory.types import ChatMessage

if TYPE_CHECKING:
    from aiogram import Bot

log = logging.getLogger(__name__)

MAX_MESSAGE_UNITS = 4096  # Telegram refuses longer text (it counts UTF-16 code units)
MAX_FLOOD_WAIT = 60  # the longest flood-control wait (seconds) a reply is held back for; longer ones fail
FLOOD_RETRIES = 3  # sends tried again after a flood-control answer, each after the wait Telegram asks for


async def send_text(
    bot: Bot, chat_id: str, text: str, *, reply_to: str | None, bot_id: int, bot_username: str | None
) -> ChatMessage:
    """Send plain text (no parse mode, whatever the Bot's default) through `bot` to chat `chat_id`,
    as an answer to message `reply_to` when given, and return the message as Telegram stored it (read
    as sent by `bot_id`, whose username is `bot_username`); text over Telegram's 4096 UTF-16 code units
    is cut there, between whole characters, with `…`.

    Flood control (429) is waited out as Telegram asks, up to MAX_FLOOD_WAIT seconds a time and
    FLOOD_RETRIES times. A group upgraded to a supergroup gets the message under its new id (the
    returned message names that chat). Any other refusal, or a longer wait, raises `SendError`."""
    from aiogram.exceptions import TelegramAPIError, TelegramMigrateToChat, TelegramRetryAfter
    from aiogram.types import ReplyParameters

    reply = ReplyParameters(message_id=int(reply_to), allow_sending_without_reply=True) if reply_to else None
    text = fit_message(text, MAX_MESSAGE_UNITS, chat_id, utf16=True)
    retries, moved = FLOOD_RETRIES, False
    while True:
        try:
            sent = await bot.send_message(  # no parse mode, whatever default the Bot was given
                chat_id=int(chat_id), text=text, reply_parameters=reply, parse_mode=None
            )
            break
        except TelegramRetryAfter as exc:
            if retries == 0 or exc.retry_after > MAX_FLOOD_WAIT:
                raise SendError(f"Telegram refused the message to {chat_id}: {exc}") from exc
            retries -= 1
            log.warning("Telegram flood control in %s: sending again in %ss", chat_id, exc.retry_after)
            await asyncio.sleep(exc.retry_after)
        except TelegramMigrateToChat as exc:
            if moved:
                raise SendError(f"Telegram refused the message to {chat_id}: {exc}") from exc
            moved = True
            log.warning("Telegram group %s is now supergroup %s", chat_id, exc.migrate_to_chat_id)
            chat_id, reply = str(exc.migrate_to_chat_id), None  # message ids do not carry over
        except TelegramAPIError as exc:  # TelegramNetworkError included
            raise SendError(f"Telegram refused the message to {chat_id}: {exc}") from exc
    converted = message_to_chat(sent, bot_id=bot_id, bot_username=bot_username)
    if converted is None:
        raise SendError(f"Telegram returned an empty message for chat {chat_id}")
    return converted
