"""Members leaving and joining a QQ group: OneBot's `group_decrease` and `group_increase` notices reach
memory as membership changes; the bot's own account leaving marks nobody."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.onebot_v11 import OneBotAdapter, OneBotConfig
from adapters.onebot_v11.event import membership_notice
from bot.app import App, build_app
from bot.config import ConfigStore
from bot.config.settings import Settings
from bot.inbound import inbound_handler
from memory.clock import ManualClock
from memory.models import ChatMember
from memory.persons.store import person_ids_for
from memory.types import ChatMessage, InboundEvent, InvalidMessage, MembershipChange
from tests.adapters.onebot_v11.peers import SELF_ID, TOKEN, Peer, fixture
from tests.conftest import T0
from tests.fuzzing import fixture_json, json_values, mutated
from tests.waiting import WAIT


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def test_decrease_and_increase_notices_are_leaves_and_joins_of_the_group() -> None:
    assert membership_notice(fixture("group_decrease_leave.json")) == MembershipChange(
        "qq", ("123456",), "20002", at(1709294400)
    )
    kicked = membership_notice(fixture("group_decrease_kick.json"))
    assert kicked == MembershipChange("qq", ("123456",), "20003", at(1709294460)), "the member, not the admin"
    joined = membership_notice(fixture("group_notice_increase.json"))
    assert joined == MembershipChange("qq", ("123456",), "20009", at(1709294200), joined=True)
    assert membership_notice(fixture("group_recall.json")) is None
    with pytest.raises(InvalidMessage, match="group_decrease"):
        membership_notice(fixture("group_decrease_leave.json") | {"user_id": None})
    with pytest.raises(InvalidMessage, match="time"):
        membership_notice(fixture("group_decrease_leave.json") | {"time": "yesterday"})


@given(
    st.one_of(
        json_values,
        mutated(fixture_json("onebot_v11/group_decrease_leave.json")),
        mutated(fixture_json("onebot_v11/group_notice_increase.json")),
    )
)
def test_a_notice_is_a_membership_change_none_or_invalid_message(data: Any) -> None:
    try:
        found = membership_notice(data) if isinstance(data, dict) else None
    except InvalidMessage:
        return
    assert found is None or (isinstance(found, MembershipChange) and found.chat_ids and found.user_id)


class Wired:
    """A reverse-mode adapter handing its events to a real bot (`inbound_handler`, as `qunyi run`
    does), and the events it handled, in order."""

    def __init__(self, app: App, adapter: OneBotAdapter) -> None:
        self.app, self.adapter = app, adapter
        self.handled: asyncio.Queue[InboundEvent] = asyncio.Queue()
        self._handle = inbound_handler(app, adapter, asyncio.Event())

    async def __call__(self, event: InboundEvent) -> None:
        await self._handle(event)
        await self.handled.put(event)

    async def next(self) -> InboundEvent:
        return await asyncio.wait_for(self.handled.get(), WAIT)

    async def left_at(self, user: str) -> float | None:
        chat = await self.app.memory.chat("qq", "123456")
        assert chat is not None
        async with self.app.db.read() as session:
            person = (await person_ids_for(session, "qq", [user]))[user]
            member = await session.get(ChatMember, (chat.id, person))
        assert member is not None
        return member.left_at


@pytest.fixture
async def wired(tmp_path: Path, session: aiohttp.ClientSession) -> AsyncIterator[tuple[Wired, Peer]]:
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", ManualClock(T0))
    config = OneBotConfig(port=0, access_token=TOKEN, reply_lookup_timeout=WAIT)
    adapter = OneBotAdapter(config)
    bot = Wired(app, adapter)
    await adapter.start(bot)
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Self-ID": SELF_ID, "X-Client-Role": "Universal"}
    url = f"ws://127.0.0.1:{adapter.bound_port}{config.path}"
    peer = Peer(await session.ws_connect(url, headers=headers))
    try:
        yield bot, peer
    finally:
        await peer.close()
        await adapter.stop()
        await app.close()


async def test_a_member_leaving_is_marked_gone_and_a_later_join_brings_them_back(
    wired: tuple[Wired, Peer],
) -> None:
    """No adapter told memory of a member leaving: they stayed a member of the group for ever."""
    bot, peer = wired
    await peer.send(fixture("group_message_array.json"))  # 20002 writes, at 1709294160
    assert isinstance(await bot.next(), ChatMessage)
    await peer.send(fixture("group_decrease_leave.json"))
    assert await bot.next() == MembershipChange("qq", ("123456",), "20002", at(1709294400))
    assert await bot.left_at("20002") == 1709294400
    await peer.send(fixture("group_notice_increase.json") | {"user_id": 20002})  # dated before the leave
    assert isinstance(await bot.next(), MembershipChange)
    assert await bot.left_at("20002") == 1709294400, "a join older than the leave changes nothing"
    await peer.send(fixture("group_notice_increase.json") | {"user_id": 20002, "time": 1709294500})
    assert (await bot.next()).joined  # type: ignore[union-attr]
    assert await bot.left_at("20002") is None


async def test_the_bot_removed_from_the_group_is_logged_and_marks_nobody(
    wired: tuple[Wired, Peer], caplog: pytest.LogCaptureFixture
) -> None:
    bot, peer = wired
    await peer.send(fixture("group_message_array.json"))
    await bot.next()
    with caplog.at_level(logging.WARNING, "adapters.onebot_v11"):
        await peer.send(fixture("group_decrease_kick_me.json"))
        await peer.send(fixture("group_decrease_leave.json") | {"user_id": int(SELF_ID), "time": 1709294530})
        await peer.send(fixture("group_message_cq.json") | {"time": 1709294600})
        assert isinstance(await bot.next(), ChatMessage), "neither of the bot's own leaves was handed on"
    assert await bot.left_at("20002") is None
    assert "OneBot bot account 10001 left group 123456 (kick_me)" in caplog.text
