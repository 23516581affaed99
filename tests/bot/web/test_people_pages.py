"""The console's people pages in a big chat: the list a page at a time, and a person page whose merge
form takes a person id (with a bounded search) instead of a dropdown of every member."""

from __future__ import annotations

import re
from datetime import timedelta

from bot.web.html import times_in, when
from bot.web.paging import MAX_LIMIT
from memory.persons.member_search import MAX_MATCHES
from memory.types import MembershipChange
from tests.bot.web.conftest import Console
from tests.conftest import T0, make_message
from tests.query_plans import largest_result

MEMBERS = 25


async def _members(console: Console, count: int = MEMBERS) -> dict[str, int]:
    """`count` members u0… of chat g1 (u0 the most active), each sending `count - i` messages; their
    person ids by user id."""
    messages = [
        make_message(n * 100 + k, sender=f"u{n}", text=f"消息 {k}")
        for n in range(count)
        for k in range(count - n)
    ]
    await console.app.memory.record_many(messages)
    persons = console.app.persons
    assert persons is not None
    return {r.platform_user_id: r.person_id for r in await persons.records(await console.chat_id())}


async def test_the_people_list_is_shown_a_page_at_a_time(console: Console) -> None:
    ids = await _members(console, 5)
    chat = await console.chat_id()
    await console.login()
    first = await (await console.client.get(f"/chats/{chat}/people?limit=2")).text()
    assert "people 1–2" in first and f"/chats/{chat}/people?limit=2&amp;offset=2" in first
    assert f">#{ids['u1']}<" in first and f">#{ids['u2']}<" not in first and "previous" not in first
    last = await (await console.client.get(f"/chats/{chat}/people?limit=2&offset=4")).text()
    assert "people 5–5" in last and f">#{ids['u4']}<" in last and f">#{ids['u0']}<" not in last
    assert f"/chats/{chat}/people?limit=2&amp;offset=2" in last and "next" not in last
    beyond = await (await console.client.get(f"/chats/{chat}/people?offset=50")).text()
    assert "no people from 51 on" in beyond and "nobody yet" in beyond
    bad = await console.client.get(f"/chats/{chat}/people?offset=-1")
    assert bad.status == 400 and "offset must be at least 0" in await bad.text()
    capped = await (await console.client.get(f"/chats/{chat}/people?limit={MAX_LIMIT * 10}")).text()
    assert "people 1–5" in capped


async def test_a_person_page_does_not_read_every_member_of_the_chat(console: Console) -> None:
    ids = await _members(console)
    chat = await console.chat_id()
    await console.login()
    with largest_result(console.app.db) as largest:
        shown = await (await console.client.get(f"/chats/{chat}/people/{ids['u0']}")).text()
    assert largest[0] < MEMBERS, "a query on the person page returned every member"
    assert "name-u7" not in shown and 'name="merged"' in shown and "<select" not in shown
    with largest_result(console.app.db) as largest:
        found = await (await console.client.get(f"/chats/{chat}/people/{ids['u0']}?find=name-u")).text()
    assert largest[0] < MEMBERS, "a search on the person page returned every member"
    assert f"only the first {MAX_MATCHES} shown" in found
    assert len(re.findall(r"merged=\d+", found)) == MAX_MATCHES


async def test_merging_by_a_searched_id_and_the_refusals(console: Console) -> None:
    memory, persons = console.app.memory, console.app.persons
    assert persons is not None
    await memory.record(make_message(1, sender="u1", text="我是小红", sender_name="小红"))
    await memory.record(make_message(2, sender="u3", text="小红的小号", sender_name="小红的小号"))
    await memory.record(make_message(3, sender="bot", text="好呀", is_bot=True))
    chat = await console.chat_id()
    ids = {r.platform_user_id: r.person_id for r in await persons.records(chat)}
    csrf = await console.login()
    base = f"/chats/{chat}/people/{ids['u1']}"
    found = await (await console.client.get(f"{base}?find=小号")).text()
    fill = f"{base}?find=%E5%B0%8F%E5%8F%B7&amp;merged={ids['u3']}"
    assert f'href="{fill}"' in found and f"merged={ids['u1']}" not in found
    by_user_id = await (await console.client.get(f"{base}?find=u3")).text()
    assert f"merged={ids['u3']}" in by_user_id
    nobody = await (await console.client.get(f"{base}?find=%25")).text()
    assert "no member of this chat matches &#x27;%&#x27;" in nobody, "% is a character, not a wildcard"
    filled = await (await console.client.get(f"{base}?merged={ids['u3']}")).text()
    assert f'name="merged" value="{ids["u3"]}"' in filled

    async def merge(merged: str) -> tuple[int, str]:
        response = await console.client.post(
            f"{base}/merge", data={"_csrf": csrf, "merged": merged, "confirm": "yes"}
        )
        return response.status, await response.text()

    status, text = await merge("小号")
    assert status == 400 and "&#x27;小号&#x27; is not a person id: give the #id of the person" in text
    assert "give the id of the person to merge" in (await merge(" "))[1]
    assert "cannot merge a person into themselves" in (await merge(f"#{ids['u1']}"))[1]
    assert "is the bot&#x27;s own account" in (await merge(str(ids["bot"])))[1]
    assert f"person 99999 is not a member of chat {chat}" in (await merge("99999"))[1]
    assert "is not a person id" in (await merge("9" * 30))[1]
    assert len(await persons.records(chat)) == 3, "nothing was merged by a refused form"
    status, text = await merge(f"#{ids['u3']}")
    assert status == 200 and f"merged #{ids['u3']} into #{ids['u1']}" in text
    assert sorted(r.person_id for r in await persons.records(chat)) == sorted([ids["u1"], ids["bot"]])


async def test_a_member_who_left_is_shown_as_left_in_the_list_and_on_their_page(console: Console) -> None:
    ids = await _members(console, 3)
    chat = await console.chat_id()
    left = MembershipChange("test", ("g1",), "u1", T0 + timedelta(days=1))
    assert await console.app.memory.change_membership(left) == 1
    await console.login()
    with times_in(console.app.settings.bot.timezone):  # the pages' zone
        shown = when(left.time)
    listed = await (await console.client.get(f"/chats/{chat}/people")).text()
    rows = {user: row for row in listed.split("<tr") for user in ("u0", "u1") if f">{user}<" in row}
    assert f"left {shown}" in rows["u1"] and "left" not in rows["u0"]
    page = await (await console.client.get(f"/chats/{chat}/people/{ids['u1']}")).text()
    assert f"left the chat {shown}" in page
    found = await (await console.client.get(f"/chats/{chat}/people/{ids['u0']}?find=name-u1")).text()
    assert f"left {shown}" in found, "the merge search shows it too"
