"""End to end over the reverse WebSocket: while the bot's answer waits for the OneBot implementation to
confirm its send, a burst of later messages is recorded all the same (OneBot never delivers them again)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
from sqlalchemy import func, select

from adapters.onebot_v11 import OneBotAdapter, OneBotConfig
from bot.app import build_app
from bot.config import ConfigStore
from bot.config.settings import Settings
from bot.inbound import inbound_handler
from bot.llm import LLMSettings
from bot.responding import Responses
from memory.clock import ManualClock
from memory.models import Message
from memory.types import InboundEvent
from tests.adapters.onebot_v11.peers import SELF_ID, TOKEN, Peer, fixture, ok
from tests.conftest import T0
from tests.fakes.openai_server import FakeOpenAI

BURST = 30


async def test_a_burst_is_recorded_while_an_answer_waits_for_its_send(
    tmp_path: Path, fake_llm: FakeOpenAI, session: aiohttp.ClientSession
) -> None:
    llm = LLMSettings(enabled=True, base_url=fake_llm.base_url, model="fake-chat", max_retries=0)
    app = await build_app(ConfigStore(Settings(llm=llm), None), tmp_path / "data", ManualClock(T0))
    config = OneBotConfig(port=0, access_token=TOKEN, action_timeout=60, reply_lookup_timeout=0.5)
    adapter, responses = OneBotAdapter(config), Responses()
    handle = inbound_handler(app, adapter, asyncio.Event(), responses)
    handled: list[InboundEvent] = []
    all_handled = asyncio.Event()

    async def counted(event: InboundEvent) -> None:
        await handle(event)
        handled.append(event)
        if len(handled) == 1 + BURST:
            all_handled.set()

    await adapter.start(counted)
    peer: Peer | None = None
    try:
        ws = await session.ws_connect(
            f"ws://127.0.0.1:{adapter.bound_port}{config.path}",
            headers={"Authorization": f"Bearer {TOKEN}", "X-Self-ID": SELF_ID, "X-Client-Role": "Universal"},
        )
        peer = Peer(ws)  # it leaves send_group_msg unanswered: the answer's send is held
        await peer.send(fixture("group_message_cq.json") | {"time": int(T0.timestamp())})
        held = await asyncio.wait_for(peer.actions.get(), 30)
        while held["action"] != "send_group_msg":
            held = await asyncio.wait_for(peer.actions.get(), 30)
        plain = {"post_type": "message", "message_type": "group", "sub_type": "normal", "group_id": 123456}
        for n in range(BURST):
            await peer.send(
                plain
                | {"time": int(T0.timestamp()) + n, "self_id": int(SELF_ID), "message_id": 6000 + n}
                | {"user_id": 20004, "message": f"第{n}条", "raw_message": f"第{n}条", "font": 0}
                | {"sender": {"user_id": 20004, "nickname": "小红"}}
            )

        async def stored() -> int:
            async with app.db.read() as read:
                return int(await read.scalar(select(func.count()).select_from(Message)) or 0)

        await asyncio.wait_for(all_handled.wait(), 30)  # under the old handler: never, the send held the feed
        assert await stored() == 1 + BURST
        await ws.send_json(ok({"message_id": -7001}) | {"echo": held["echo"]})
        await responses.stop()
        assert await stored() == 2 + BURST, "the answer recorded once its send was confirmed"
    finally:
        await responses.stop()
        await adapter.stop()
        if peer is not None:
            await peer.close()
        await app.close()
