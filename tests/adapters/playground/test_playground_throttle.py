"""Guessing the playground's token, as the admin console's: after 10 wrong tokens from one address
within 5 minutes, that address's API calls are answered 429 (JSON, with Retry-After), the token not
even checked, until the window has room; a missing token is no guess, other addresses are not affected,
a call that gets in clears the count. The clock is moved by hand."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import aiohttp
import pytest

from memory.token_throttle import FAILED_TOKENS, WINDOW_SECONDS
from tests.adapters.playground.conftest import TOKEN, Inbox, Playground, make_adapter, started
from tests.bot.web.test_login_throttle import Clock

GOOD = {"chat_id": "g1", "user": "alice", "text": "hi"}
REFUSED = "too many wrong tokens from this address: try again in {} s"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def playground(inbox: Inbox, clock: Clock) -> AsyncIterator[Playground]:
    running = await started(make_adapter(clock), inbox)
    try:
        yield running
    finally:
        await running.session.close()
        await running.adapter.stop()


async def guess(playground: Playground, times: int) -> list[int]:
    """`times` wrong tokens, on the calls of the API in turn (one with another scheme): the statuses."""
    statuses = []
    for n in range(times):
        if n % 3 == 0:
            status, _ = await playground.call("GET", "/api/chats", token="wrong")
        elif n % 3 == 1:
            status, _ = await playground.call("POST", "/api/messages", token="wrong", json=GOOD)
        else:
            basic = {"Authorization": f"Basic {TOKEN}"}
            status, _ = await playground.call("GET", "/api/chats/g1/messages", token=None, headers=basic)
        statuses.append(status)
    return statuses


async def status_of(playground: Playground, token: str | None = TOKEN) -> int:
    return (await playground.call("GET", "/api/chats", token=token))[0]


async def test_past_the_wrong_tokens_allowed_an_address_is_refused_without_its_token_being_checked(
    playground: Playground, inbox: Inbox, clock: Clock
) -> None:
    assert await guess(playground, FAILED_TOKENS) == [401] * FAILED_TOKENS
    clock.now += 100
    async with playground.session.get(
        playground.base + "/api/chats", headers={"Authorization": f"Bearer {TOKEN}"}
    ) as refused:
        assert refused.status == 429 and refused.headers["Retry-After"] == "200"
        assert await refused.json() == {"error": REFUSED.format(200)}
    assert await playground.post(**GOOD) == (429, {"error": REFUSED.format(200)})
    assert inbox.events == [] and playground.adapter.transcripts.chats() == [], "nothing was delivered"
    async with playground.session.get(playground.base + "/") as page:
        assert page.status == 200, "the page holds no secret: it needs no token, and is not refused"


async def test_another_address_is_not_affected(playground: Playground) -> None:
    await guess(playground, FAILED_TOKENS)
    assert await status_of(playground) == 429
    connector = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        other = Playground(playground.adapter, session, playground.base)
        assert await status_of(other) == 200
        assert await status_of(other, "wrong") == 401, "and a wrong token there is still a 401"


async def test_the_window_passing_lets_the_address_in_again(playground: Playground, clock: Clock) -> None:
    await guess(playground, FAILED_TOKENS - 1)
    clock.now += 60
    await guess(playground, 1)  # the tenth, a minute after the others
    clock.now += WINDOW_SECONDS - 61
    assert await status_of(playground) == 429
    clock.now += 1  # the first nine leave the window: one wrong token counts
    assert await status_of(playground, "wrong") == 401
    assert await status_of(playground) == 200


async def test_a_call_that_gets_in_clears_the_count(playground: Playground) -> None:
    await guess(playground, FAILED_TOKENS - 1)
    assert await status_of(playground) == 200
    assert await guess(playground, FAILED_TOKENS - 1) == [401] * (FAILED_TOKENS - 1)
    assert await status_of(playground) == 200


async def test_a_call_without_a_token_is_no_guess(playground: Playground) -> None:
    """Opening the page without its address's token, or calling the API bare, guesses nothing: it is
    refused as ever (401) and never locks the address out."""
    statuses = [await status_of(playground, None) for _ in range(FAILED_TOKENS + 2)]
    assert statuses == [401] * (FAILED_TOKENS + 2)
    assert await status_of(playground) == 200


async def test_a_spell_of_refusals_is_logged_once(
    playground: Playground, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    for _spell in range(2):
        await guess(playground, FAILED_TOKENS)
        assert [await status_of(playground) for _ in range(3)] == [429] * 3
        clock.now += WINDOW_SECONDS
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert (
        warnings
        == [
            f"127.0.0.1 sent {FAILED_TOKENS} wrong playground tokens within {WINDOW_SECONDS:g} s: "
            f"its requests are refused for {WINDOW_SECONDS:g} s"
        ]
        * 2
    )
    assert all(TOKEN not in warning for warning in warnings)
