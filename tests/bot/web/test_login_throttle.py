"""Guessing the console's token: after 10 wrong tokens from one address within 5 minutes, that address
is answered 429 with Retry-After, its token not even checked, until the window has room; other
addresses are not affected and a request that gets in clears the count. The clock is moved by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from memory.token_throttle import FAILED_TOKENS, WINDOW_SECONDS
from tests.bot.web.conftest import CONFIG, TOKEN, Console, serving

WRONG = {"Authorization": "Bearer wrong"}
RIGHT = {"Authorization": f"Bearer {TOKEN}"}


class Clock:
    """Seconds that pass only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def console(tmp_path: Path, clock: Clock) -> AsyncIterator[Console]:
    async with serving(tmp_path, CONFIG, clock) as served:
        yield served


async def guess(console: Console, times: int) -> list[int]:
    """`times` wrong tokens, alternately in the address and in the Authorization header: the statuses."""
    statuses = []
    for n in range(times):
        if n % 2:
            response = await console.client.get("/", headers=WRONG)
        else:
            response = await console.client.get("/?token=wrong")
        statuses.append(response.status)
    return statuses


async def test_past_the_wrong_tokens_allowed_an_address_is_refused_without_its_token_being_checked(
    console: Console, clock: Clock
) -> None:
    assert await guess(console, FAILED_TOKENS) == [401] * FAILED_TOKENS
    clock.now += 100
    refused = await console.client.get("/", headers=RIGHT)
    api = await console.client.get("/api/jargon", headers=RIGHT)
    login = await console.client.get(f"/?token={TOKEN}")
    assert refused.status == api.status == login.status == 429
    assert refused.headers["Retry-After"] == "200" and "try again in 200 s" in await refused.text()
    assert await api.json() == {"error": "too many wrong tokens from this address: try again in 200 s"}
    assert not console.client.session.cookie_jar.filter_cookies(console.client.make_url("/")), (
        "even the right token does not log in while refused"
    )
    assert (await console.client.get("/favicon.ico")).status == 200, "the icon needs no token"


async def test_another_address_is_not_affected(console: Console) -> None:
    await guess(console, FAILED_TOKENS)
    assert (await console.client.get("/", headers=RIGHT)).status == 429
    connector = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
    async with aiohttp.ClientSession(connector=connector) as other:
        async with other.get(console.client.make_url("/"), headers=RIGHT) as response:
            assert response.status == 200
        async with other.get(console.client.make_url("/"), headers=WRONG) as response:
            assert response.status == 401, "and a wrong token there is still a 401"


async def test_the_window_passing_lets_the_address_in_again(console: Console, clock: Clock) -> None:
    await guess(console, FAILED_TOKENS - 1)
    clock.now += 60
    await guess(console, 1)  # the tenth, a minute after the others
    clock.now += WINDOW_SECONDS - 61
    assert (await console.client.get("/", headers=RIGHT)).status == 429
    clock.now += 1  # the first nine leave the window: one wrong token counts
    assert (await console.client.get("/", headers=WRONG)).status == 401
    assert (await console.client.get("/", headers=RIGHT)).status == 200


async def test_a_request_that_gets_in_clears_the_count(console: Console) -> None:
    await guess(console, FAILED_TOKENS - 1)
    assert (await console.client.get("/", headers=RIGHT)).status == 200
    assert await guess(console, FAILED_TOKENS - 1) == [401] * (FAILED_TOKENS - 1)
    assert (await console.client.get("/", headers=RIGHT)).status == 200


async def test_a_request_without_a_token_or_with_a_stale_cookie_is_no_guess(console: Console) -> None:
    """Opening the console without its link, or with the cookie of a token changed since, guesses
    nothing: it is refused as ever (401) and never locks the address out."""
    console.client.session.cookie_jar.update_cookies({"qunyi_session": "stale"})
    statuses = [(await console.client.get("/jargon")).status for _ in range(FAILED_TOKENS + 2)]
    assert statuses == [401] * (FAILED_TOKENS + 2)
    assert (await console.client.get("/", headers=RIGHT)).status == 200
