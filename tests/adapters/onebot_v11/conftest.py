"""A loopback OneBot v11 implementation for driving the adapter end to end (its parts: `peers`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from adapters.onebot_v11 import OneBotAdapter, OneBotConfig
from tests.adapters.onebot_v11.frames import ManualReads
from tests.adapters.onebot_v11.peers import SELF_ID, TOKEN, ConnectPeer, Inbox, Peer, fixture
from tests.waiting import WAIT, eventually


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
def reads() -> ManualReads:
    """The frame reads of the `reverse` adapter, on a clock that stands still until moved: no
    connection goes stale unless a test moves it on."""
    return ManualReads()


@pytest.fixture
async def reverse(reads: ManualReads) -> AsyncIterator[tuple[OneBotAdapter, Inbox, str]]:
    """A started reverse-mode adapter on an ephemeral loopback port, its inbox and its ws url."""
    config = OneBotConfig(
        port=0, access_token=TOKEN, stale_timeout=WAIT, action_timeout=WAIT, reply_lookup_timeout=WAIT
    )
    adapter = OneBotAdapter(config, read_frame=reads)
    inbox = Inbox()
    await adapter.start(inbox)
    url = f"ws://127.0.0.1:{adapter.bound_port}{config.path}"
    yield adapter, inbox, url
    await adapter.stop()


@pytest.fixture
async def connect_peer(
    session: aiohttp.ClientSession, reverse: tuple[OneBotAdapter, Inbox, str]
) -> AsyncIterator[ConnectPeer]:
    """Dial the reverse server as NapCat would (token and self id headers) and wait until accepted."""
    peers: list[Peer] = []

    async def connect(self_id: str = SELF_ID) -> Peer:
        adapter, _, url = reverse
        ws = await session.ws_connect(
            url,
            headers={"Authorization": f"Bearer {TOKEN}", "X-Self-ID": self_id, "X-Client-Role": "Universal"},
        )
        peer = Peer(ws)
        peers.append(peer)
        await peer.send(fixture("lifecycle_connect.json") | {"self_id": int(self_id)})
        await eventually(lambda: self_id in adapter.self_ids, f"connection {self_id} accepted", WAIT)
        return peer

    yield connect
    for peer in peers:
        await peer.close()
