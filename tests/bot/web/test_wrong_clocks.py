"""Messages dated at the edges of what is accepted (1970-01-01, the last minute before the year 9000)
among ordinary ones: every background job runs over them without failing, and every console page
showing them renders."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.clock import ManualClock
from tests.bot.web.conftest import Console
from tests.conftest import T0, make_message

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LAST = datetime(8999, 12, 31, 23, 59, tzinfo=UTC)
DATED = {4: EPOCH, 6: LAST, 18: EPOCH, 21: LAST, 30: LAST}


async def test_jobs_and_pages_take_messages_dated_at_either_edge(console: Console) -> None:
    memory = console.app.memory
    await memory.record_many(
        [
            make_message(
                n, sender=f"u{n % 3}", text=f"周末去九溪爬山 吃火锅 xswl 小红说她喜欢猫 {n}", **extra
            )
            for n in range(1, 31)
            for extra in [{"time": DATED[n]} if n in DATED else {}]
        ]
    )
    clock = console.app.clock
    assert isinstance(clock, ManualClock)
    runner = console.app.runner
    for hours in range(1, 31):
        clock.set(T0 + timedelta(hours=hours))
        await runner.run_due(clock.now())
    await runner.run_all()
    assert runner.runs["topic_check"] > 0 and runner.runs["forgetting"] > 0
    assert all(count == 0 for count in runner.failures.values()), runner.failures
    await console.login()
    chat = await console.chat_id()
    for path in (f"/chats/{chat}", f"/chats/{chat}/topics", f"/chats/{chat}/messages/6"):
        response = await console.client.get(path)
        body = await response.text()
        assert response.status == 200 and "8999-12-31" in body and "1970-01-01" in body, path
    for path in ("/", f"/chats/{chat}/people", "/forgetting", "/jargon"):
        assert (await console.client.get(path)).status == 200, path
