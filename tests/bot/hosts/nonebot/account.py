"""A QQ account behind a real nonebot OneBot v11 Bot, whose implementation side is played here: its API
calls are recorded and answered without a network. A module of its own, not conftest, as
tests/adapters/onebot_v11/peers.py says why."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from nonebot.adapters.onebot.v11 import ActionFailed, Adapter, Bot
from nonebot.drivers import Driver

from bot.plugin import QunyiPlugin
from memory.types import InboundEvent
from tests.adapters.onebot_v11.peers import SELF_ID, fixture

Answer = Callable[[dict[str, Any]], Any]


class Implementation(Adapter):
    """The OneBot implementation's side of the bot: each API call is recorded in `calls` and answered
    by `answers` (raising for a failure; an awaitable answer is awaited), never sent anywhere."""

    def __init__(self, driver: Driver) -> None:
        super().__init__(driver)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        ids = itertools.count(9001)
        self.answers: dict[str, Answer] = {
            "get_login_info": lambda _: {"user_id": int(SELF_ID), "nickname": "群忆"},
            "get_msg": lambda params: answer_get_msg(params),
            "send_group_msg": lambda _: {"message_id": next(ids)},
            "send_private_msg": lambda _: {"message_id": next(ids)},
            "send_msg": lambda _: {"message_id": next(ids)},
        }

    async def _call_api(self, bot: Bot, api: str, **data: Any) -> Any:
        self.calls.append((api, data))
        answer = self.answers.get(api)
        if answer is None:
            raise ActionFailed(status="failed", retcode=1404, message=f"no {api} here")
        result = answer(data)
        return await result if inspect.isawaitable(result) else result

    def sent(self) -> list[tuple[str, dict[str, Any]]]:
        """The send_* calls made so far."""
        return [(api, data) for api, data in self.calls if api.startswith("send_")]


def answer_get_msg(params: dict[str, Any]) -> dict[str, Any]:
    """What the implementation knows of message -1234 (the bot's, which group_message_reply.json answers)."""
    known = fixture("get_msg_bot_message.json")
    if params.get("message_id") != known["message_id"]:
        raise ActionFailed(status="failed", retcode=1404, message="no such message")
    return known


class QQ:
    """The bot's QQ account as nonebot has it, nonebot's driver started: `receive` hands it an event as
    the implementation posts it (JSON), through nonebot's own parsing and handling; `fed` are the
    events Qunyi was fed; `stop` stops the driver (Qunyi with it)."""

    def __init__(
        self, driver: Driver, implementation: Implementation, plugin: ModuleType, data_dir: Path
    ) -> None:
        self.driver, self.implementation, self.plugin, self.data_dir = (
            driver,
            implementation,
            plugin,
            data_dir,
        )
        self.bot = Bot(implementation, SELF_ID)
        self.fed: list[InboundEvent] = []
        self.running = False

    async def start(self) -> None:
        await self.driver._lifespan.startup()
        self.running = True
        self.driver._bot_connect(self.bot)

    async def stop(self) -> None:
        if self.running:
            self.running = False
            self.driver._bot_disconnect(self.bot)
            await self.driver._lifespan.shutdown()

    async def receive(self, data: dict[str, Any]) -> None:
        event = Adapter.json_to_event(data)
        assert event is not None, data
        await self.bot.handle_event(event)

    @property
    def qunyi(self) -> QunyiPlugin:
        """The running Qunyi, as another plugin reaches it."""
        qunyi: QunyiPlugin = self.plugin.qunyi()
        return qunyi
