"""The console's pages showed times in the machine's zone (or the offset a message was sent with),
not `[bot] timezone`."""

from __future__ import annotations

from datetime import timedelta, timezone
from pathlib import Path

from tests.bot.web.conftest import CONFIG, serving
from tests.conftest import T0, make_message

TOKYO = timezone(timedelta(hours=9))


async def test_pages_show_times_in_the_bots_time_zone(tmp_path: Path) -> None:
    async with serving(tmp_path, CONFIG + '[bot]\ntimezone = "Asia/Shanghai"\n') as console:
        await console.app.memory.record_many(
            [
                make_message(1, text="早上好"),  # 12:01 UTC
                make_message(
                    2, sender="u2", text="周末爬山", time=(T0 + timedelta(minutes=2)).astimezone(TOKYO)
                ),
            ]
        )
        await console.login()
        chat = await console.chat_id()
        body = await (await console.client.get(f"/chats/{chat}")).text()
        assert "2026-03-01 20:01" in body and "2026-03-01 20:02" in body, body
        assert "12:01" not in body and "21:02" not in body, body
        people = await (await console.client.get(f"/chats/{chat}/people")).text()
        assert "2026-03-01 20:02" in people and "12:02" not in people, people
