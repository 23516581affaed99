"""A listening part whose port is taken: the error said "Address already in use" without saying which
of the bot's servers it was or what to change."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from adapters.base import Adapter
from adapters.listening import CannotListen
from adapters.onebot_v11 import OneBotAdapter, OneBotConfig
from adapters.playground import PlaygroundAdapter, PlaygroundConfig


def _onebot(port: int) -> Adapter:
    return OneBotAdapter(OneBotConfig(port=port))


def _playground(port: int) -> Adapter:
    return PlaygroundAdapter(PlaygroundConfig(port=port), bot_id="bot", bot_name="群忆")


@pytest.mark.parametrize(
    ("make", "table"), [(_onebot, "[adapters.onebot_v11]"), (_playground, "[adapters.playground]")]
)
async def test_a_taken_port_names_the_address_and_the_setting(
    make: Callable[[int], Adapter], table: str, taken_port: int
) -> None:
    adapter = make(taken_port)

    async def handler(_event: object) -> None:
        raise AssertionError("nothing arrives")

    try:
        with pytest.raises(CannotListen) as refused:
            await adapter.start(handler)
    finally:
        await adapter.stop()
    assert str(refused.value) == (
        f"cannot listen on 127.0.0.1:{taken_port} (Address already in use); another program holds that "
        f"port: change {table} port"
    )
