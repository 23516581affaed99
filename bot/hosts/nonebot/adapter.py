"""Qunyi inside a nonebot2 bot's OneBot v11 (QQ) bots: what they receive is fed to a bot.plugin.QunyiPlugin,
and Qunyi's answers go out through them.

The events are read as Qunyi's own OneBot adapter reads them (adapters.onebot_v11.reader), so memory
is the same whichever of the two recorded a chat: platform `qq`, groups by number, private chats as
`private-<QQ>`.
"""

from __future__ import annotations

import functools
import logging
import time
import weakref
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import nonebot
from nonebot.adapters.onebot.v11 import Bot, Message, MessageSegment

from adapters.base import SendError
from adapters.host import sending_an_answer
from adapters.onebot_v11.event import PLATFORM
from adapters.onebot_v11.message import maybe_int
from adapters.onebot_v11.reader import EventReader, GetMsg
from adapters.onebot_v11.sending import chat_to_send_to, send_action, sent_message
from bot.hosts.nonebot.arrivals import in_turn
from bot.hosts.nonebot.config import NonebotConfig
from bot.hosts.nonebot.event import SEND_ACTIONS, event_data, sent_event
from bot.plugin import QunyiPlugin, QunyiStopped
from memory.types import ChatKind, ChatMessage, InboundEvent

log = logging.getLogger(__name__)


class NonebotQunyi:
    """The Qunyi of a nonebot2 process: started and stopped with nonebot's driver, fed the events of its
    OneBot v11 bots (`message`, `notice`, and `api_called` for what other plugins send)."""

    def __init__(self) -> None:
        self._plugin: QunyiPlugin | None = None
        self._reader = EventReader()
        self._nicknames: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    @property
    def plugin(self) -> QunyiPlugin:
        """The running Qunyi (QunyiStopped before the driver started it, or after it stopped)."""
        if self._plugin is None:
            raise QunyiStopped("Qunyi is not running: nonebot's driver has not started it")
        return self._plugin

    async def start(self, config: NonebotConfig) -> None:
        """Open Qunyi's data directory and start its jobs, as `qunyi run` would (its errors are raised,
        and nonebot's start fails with them)."""
        plugin = QunyiPlugin(PLATFORM, self.send, config=config.qunyi_config, data_dir=config.qunyi_data_dir)
        await plugin.start()
        self._plugin = plugin

    async def stop(self) -> None:
        """Let the events being recorded and the answers under way finish, and close the data directory.
        Events handed in meanwhile are still recorded; later ones are logged as not recorded."""
        plugin = self._plugin
        if plugin is not None:
            try:
                await plugin.stop()
            finally:
                self._plugin = None

    async def message(self, bot: Bot, event: Any) -> None:
        """Record a message event of `bot` (a `message`, or a `message_sent` the implementation posts
        for the bot's own messages), read as adapters.onebot_v11 reads it."""
        data = event_data(event)
        looked_up = data.get("post_type") == "message"  # nonebot asked for its reply: not asked twice
        get_msg = _looked_up(event) if looked_up else functools.partial(_get_msg, bot)
        async with in_turn():  # after the events of its chat that came before it
            message = await self._reader.message(
                data,
                account=bot.self_id,
                accounts=_accounts(),
                nickname=await self._nickname(bot),
                get_msg=get_msg,
            )
            await self._feed(message)

    async def notice(self, bot: Bot, event: Any) -> None:
        """Apply a recall (the message is forgotten) or a member leaving or joining a group."""
        async with in_turn():
            await self._feed(
                self._reader.notice(event_data(event), account=bot.self_id, accounts=_accounts())
            )

    async def api_called(
        self, bot: Any, exception: Exception | None, api: str, params: Mapping[str, Any], answer: Any
    ) -> None:
        """Record a message one of `bot`'s API calls sent (another plugin's answer), as the bot's own."""
        if (
            api not in SEND_ACTIONS
            or exception is not None
            or sending_an_answer()
            or not isinstance(bot, Bot)
        ):
            return
        nickname = await self._nickname(bot)
        data = sent_event(api, params, answer, account=bot.self_id, nickname=nickname, time=time.time())
        if data is None:
            return
        message = await self._reader.message(
            data,
            account=bot.self_id,
            accounts=_accounts(),
            nickname=nickname,
            get_msg=functools.partial(_get_msg, bot),
        )
        await self._feed(message)

    async def send(
        self, chat_id: str, text: str, *, chat_kind: ChatKind, reply_to: str | None
    ) -> ChatMessage:
        """Qunyi's answer, sent through the bot that saw the chat (else the only one connected): the
        bot.plugin.HostSend of this host. Raises when it could not be sent."""
        chat_id = chat_to_send_to(chat_id, chat_kind)
        bot = _bot_for(self._reader.owner(chat_kind, chat_id))
        action, params = send_action(
            chat_id, text, chat_kind=chat_kind, reply_to=reply_to, temp_group=self._reader.temp_group(chat_id)
        )
        params["message"] = Message(MessageSegment(seg["type"], seg["data"]) for seg in params["message"])
        answer = await bot.call_api(action, **params)
        sent = sent_message(
            action,
            answer,
            chat_id,
            text,
            chat_kind=chat_kind,
            reply_to=reply_to,
            account=bot.self_id,
            nickname=await self._nickname(bot),
            time=datetime.now(UTC),
        )
        return self._reader.sent(sent)

    async def _feed(self, event: InboundEvent | None) -> None:
        if event is None:
            return
        try:
            await self.plugin.feed(event)
        except QunyiStopped as exc:
            log.warning("%s", exc)

    async def _nickname(self, bot: Bot) -> str:
        """The bot's QQ nickname (`get_login_info`, asked once per connection; empty when it failed)."""
        known = self._nicknames.get(bot)
        if known is None:
            try:
                info = await bot.get_login_info()
            except Exception as exc:  # nonebot's failures, whatever the driver raises
                log.warning("get_login_info of bot %s failed (%r): '@' of it show its QQ", bot.self_id, exc)
                info = {}
            known = self._nicknames[bot] = (
                str(info.get("nickname") or "") if isinstance(info, Mapping) else ""
            )
        return known


def _looked_up(event: Any) -> GetMsg:
    """The `get_msg` of a message event: the answer nonebot had for its reply (`event.reply`)."""
    reply = event_data(event.reply) if event.reply is not None else None

    async def get_msg(message_id: str) -> Any:
        return reply if reply is not None and str(reply.get("message_id")) == message_id else None

    return get_msg


async def _get_msg(bot: Bot, message_id: str) -> Any:
    """The message a reply points to, looked up through `bot`; None when `get_msg` failed."""
    try:
        return await bot.call_api("get_msg", message_id=maybe_int(message_id))
    except Exception as exc:  # nonebot's failures, whatever the driver raises
        log.debug("get_msg %s for a reply failed: %r", message_id, exc)
        return None


def _v11_bots() -> dict[str, Bot]:
    return {self_id: bot for self_id, bot in nonebot.get_bots().items() if isinstance(bot, Bot)}


def _accounts() -> list[str]:
    """The QQ numbers of the OneBot v11 bots connected."""
    return list(_v11_bots())


def _bot_for(owner: str | None) -> Bot:
    """The bot to answer a chat through: the one that saw it (`owner`), else the first connected."""
    bots = _v11_bots()
    if owner is not None and owner in bots:
        return bots[owner]
    if not bots:
        raise SendError("no OneBot v11 bot is connected to nonebot")
    return next(iter(bots.values()))
