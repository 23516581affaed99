"""The console's pages and actions against a real database: jargon review, escaping, people,
notes, forgetting, usage, config."""

from __future__ import annotations

import html
import re
from pathlib import Path

from sqlalchemy import update

from bot.web.html import when
from memory.chat_merge import merge_chats
from memory.jargon import dictionary
from memory.models import ChatRedirect, PersonAlias
from memory.persons.service import PersonMemory
from memory.persons.store import PersonRecord
from memory.storage.fts import index_rows
from tests.bot.test_doctor import add_offline_work
from tests.bot.web.conftest import CONFIG, TOKEN, Console, history_row, serving
from tests.conftest import T0, database_locked, make_message
from tests.memory.jargon.jargon_helpers import mine, record
from tests.memory.jargon.test_jargon_member_meanings import USES, explained_in_b

HOSTILE = "<script>alert('x')</script>"


async def _entries(console: Console) -> tuple[int, int]:
    memory = console.app.memory
    ids = await record(memory, 0, ["xswl 笑死", "真的xswl", "awsl", "awsl 好可爱"])
    chat = await console.chat_id()
    return await mine(memory, chat, "xswl", ids[:2]), await mine(memory, chat, "awsl", ids[2:])


async def _checkboxes(console: Console) -> dict[int, str]:
    """Each entry's batch checkbox value on the list page (`id:revision`)."""
    listed = await (await console.client.get("/jargon")).text()
    values = re.findall(r'name="ids" value="([^"]*)"', listed)
    return {int(value.partition(":")[0]): value for value in values}


async def _entry(console: Console, jargon_id: int) -> dictionary.EntryView | None:
    async with console.app.db.read() as session:
        return await dictionary.get(session, jargon_id)


async def test_add_a_term_by_hand_and_import_a_pasted_dictionary(console: Console) -> None:
    csrf = await console.login()
    client = console.client
    await console.app.memory.record(make_message(1, text="开炉了开炉了"))
    g1 = await console.chat_id()
    assert "Import dictionary" in await (await client.get("/jargon")).text()
    added = await client.post(
        "/jargon/add", data={"_csrf": csrf, "content": "开炉", "meaning": "开始打游戏", "chat": str(g1)}
    )
    assert added.status == 200 and "开始打游戏" in await added.text()
    async with console.app.db.read() as session:
        entries = await dictionary.list_entries(session, search="开炉")
    assert [(e.content, e.meaning, e.chat_id, e.status, e.provenance) for e in entries] == [
        ("开炉", "开始打游戏", g1, "approved", "manual")
    ]
    nowhere = await client.post("/jargon/add", data={"_csrf": csrf, "content": "x", "chat": "999"})
    assert nowhere.status == 400 and "no chat with id 999" in await nowhere.text()
    pasted = "content,meaning\nyyds,永远的神\n,no term here\nawsl,啊我死了\n"
    imported = await client.post("/jargon/import", data={"_csrf": csrf, "text": pasted, "format": "csv"})
    body = await imported.text()
    assert imported.status == 200 and "2 created, 0 updated, 1 errors" in body and "row 2" in body
    async with console.app.db.read() as session:
        found = {e.content: e.meaning for e in await dictionary.list_entries(session, statuses=["approved"])}
    assert found == {"开炉": "开始打游戏", "yyds": "永远的神", "awsl": "啊我死了"}
    json_text = '{"yyds": "永远滴神"}'
    await client.post("/jargon/import", data={"_csrf": csrf, "text": json_text, "format": "json"})
    async with console.app.db.read() as session:
        assert [e.meaning for e in await dictionary.list_entries(session, search="yyds")] == ["永远滴神"]
    forged = await client.post("/jargon/add", data={"content": "csrf-less"})
    assert forged.status == 403
    # An unknown format was read as CSV: a JSON paste got "needs a header row with a 'content' column".
    unknown = await client.post(
        "/jargon/import", data={"_csrf": csrf, "text": '[{"content": "q"}]', "format": "yaml"}
    )
    refused = html.unescape(await unknown.text())
    assert unknown.status == 400 and "format must be csv or json, not 'yaml'" in refused
    unnamed = await client.post("/jargon/import", data={"_csrf": csrf, "text": "content\nzz\n"})
    assert unnamed.status == 200 and "1 created" in await unnamed.text(), "no format: CSV, as before"


async def test_approve_reject_edit_delete_round_trip(console: Console) -> None:
    xswl, awsl = await _entries(console)
    csrf = await console.login()
    client = console.client
    listed = await (await client.get("/jargon?min_count=2")).text()
    assert "xswl" in listed and "awsl" in listed
    page = await client.post(f"/jargon/{xswl}/approve", data={"_csrf": csrf, "meaning": "笑死我了"})
    assert page.status == 200 and "approved" in await page.text()
    entry = await _entry(console, xswl)
    assert entry is not None and (entry.status, entry.meaning, entry.decided_by) == (
        "approved",
        "笑死我了",
        "web",
    )
    await client.post(f"/jargon/{awsl}/reject", data={"_csrf": csrf})
    assert (await _entry(console, awsl)).status == "rejected"  # type: ignore[union-attr]
    await client.post(
        f"/jargon/{xswl}/edit",
        data={"_csrf": csrf, "meaning": "笑死我了（夸张）", "content": "XSWL", "kind": ""},
    )
    entry = await _entry(console, xswl)
    assert entry is not None and (entry.content, entry.meaning, entry.provenance) == (
        "XSWL",
        "笑死我了（夸张）",
        "manual",
    )
    shown = await (await client.get(f"/jargon/{xswl}")).text()
    assert "真的xswl" in shown, "evidence messages are shown in context"
    assert "edit" in shown and "approve" in shown, "the review trail"
    refused = await client.post(f"/jargon/{xswl}/delete", data={"_csrf": csrf})
    assert refused.status == 400 and await _entry(console, xswl) is not None
    await client.post(f"/jargon/{xswl}/delete", data={"_csrf": csrf, "confirm": "yes"})
    assert await _entry(console, xswl) is None
    missing = await client.post("/jargon/9999/approve", data={"_csrf": csrf})
    assert missing.status == 400 and "no jargon entry with id 9999" in await missing.text()


async def test_a_decision_on_an_entry_changed_since_its_page_was_opened_is_refused(console: Console) -> None:
    """Two admins (or an admin and inference) on one entry: the second save overwrote the first."""
    xswl, _awsl = await _entries(console)
    csrf = await console.login()
    client = console.client
    shown = await (await client.get(f"/jargon/{xswl}")).text()
    seen = re.findall(r'name="revision" value="(\d+)"', shown)
    assert len(set(seen)) == 1, "the forms carry one revision"
    first = await client.post(
        f"/jargon/{xswl}/approve", data={"_csrf": csrf, "meaning": "笑死我了", "revision": seen[0]}
    )
    assert first.status == 200
    stale = await client.post(
        f"/jargon/{xswl}/edit", data={"_csrf": csrf, "meaning": "别的意思", "kind": "", "revision": seen[0]}
    )
    body = html.unescape(await stale.text())
    assert stale.status == 409 and "was changed since you opened it" in body and "笑死我了" in body
    entry = await _entry(console, xswl)
    assert entry is not None and entry.meaning == "笑死我了", "nothing was overwritten"
    again = await client.post(
        f"/jargon/{xswl}/approve", data={"_csrf": csrf, "meaning": "x", "revision": seen[0]}
    )
    assert again.status == 409, "a form sent twice (the back button) decides once"
    # The reject form carried no revision: it overwrote an approval made after its page was opened;
    # nor did the delete form (ticked): a second admin's tab deleted the approval it never saw.
    for action in ("reject", "delete"):
        form = re.search(rf'action="/jargon/{xswl}/{action}".*?</form>', shown, re.S)
        assert form is not None
        fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form.group(0)))
        refused = await client.post(f"/jargon/{xswl}/{action}", data=fields)
        assert refused.status == 409 and "was changed since you opened it" in await refused.text(), action
        entry = await _entry(console, xswl)
        assert entry is not None and (entry.status, entry.meaning) == ("approved", "笑死我了"), action


async def test_batch_approve_and_reject(console: Console) -> None:
    xswl, awsl = await _entries(console)
    csrf = await console.login()
    checked = await _checkboxes(console)
    data = [
        ("_csrf", csrf),
        ("ids", checked[xswl]),
        ("ids", checked[awsl]),
        ("action", "approve"),
        ("back", "/jargon"),
    ]
    response = await console.client.post("/jargon/batch", data=data)
    assert response.status == 200 and "approved 2 entries" in await response.text()
    assert [(await _entry(console, i)).status for i in (xswl, awsl)] == ["approved", "approved"]  # type: ignore[union-attr]
    checked = await _checkboxes(console)
    await console.client.post(
        "/jargon/batch", data=[("_csrf", csrf), ("ids", checked[awsl]), ("action", "reject")]
    )
    assert (await _entry(console, awsl)).status == "rejected"  # type: ignore[union-attr]
    assert (await _entry(console, xswl)).status == "approved"  # type: ignore[union-attr]
    off_site = await console.client.post(
        "/jargon/batch",
        data=[("_csrf", csrf), ("ids", str(xswl)), ("action", "reject"), ("back", "//evil.example/")],
        allow_redirects=False,
    )
    assert off_site.headers["Location"] == "/jargon", "never redirects off the console"


async def test_a_batch_from_a_stale_list_skips_the_entries_changed_since_and_says_why(
    console: Console,
) -> None:
    """The list's batch form sent ids only: a batch from a list loaded before another admin decided an
    entry overwrote that decision."""
    xswl, awsl = await _entries(console)
    csrf = await console.login()
    client = console.client
    checked = await _checkboxes(console)
    await client.post(f"/jargon/{xswl}/approve", data={"_csrf": csrf, "meaning": "笑死我了"})  # meanwhile
    stale = [("_csrf", csrf), ("ids", checked[xswl]), ("ids", checked[awsl]), ("action", "reject")]
    response = await client.post("/jargon/batch", data=[*stale, ("back", "/jargon")])
    body = html.unescape(await response.text())
    assert response.status == 200 and "rejected 1 entries; skipped 1" in body
    assert "(xswl) was changed since you opened it (now approved, meaning 笑死我了)" in body
    shown = [(e.status, e.meaning) for e in [await _entry(console, i) for i in (xswl, awsl)] if e]
    assert shown == [("approved", "笑死我了"), ("rejected", "")], "the other entry is decided"
    # A bare id (an older page's form) says no revision: it is never decided blindly either.
    bare = await client.post(
        "/jargon/batch", data=[("_csrf", csrf), ("ids", str(xswl)), ("action", "reject")]
    )
    body = html.unescape(await bare.text())
    assert "rejected 0 entries; skipped 1" in body and "sent without the revision it was seen at" in body
    entry = await _entry(console, xswl)
    assert entry is not None and entry.status == "approved"
    refused = await client.post(
        "/jargon/batch", data=[("_csrf", csrf), ("ids", f"{xswl}:x"), ("action", "reject")]
    )
    assert refused.status == 400 and "revision must be a whole number" in await refused.text()


async def test_json_api_lists_and_decides_with_a_bearer_token(console: Console) -> None:
    xswl, awsl_id = await _entries(console)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    listed = await (
        await console.client.get("/api/jargon?min_count=2&status=candidate", headers=headers)
    ).json()
    assert sorted(e["content"] for e in listed["entries"]) == ["awsl", "xswl"]
    decided = await console.client.post(
        "/api/jargon/decide", json={"ids": [xswl], "action": "approve", "meaning": "笑死", "by": "bot-admin"},
        headers=headers,
    )  # fmt: skip
    assert decided.status == 200
    assert (await decided.json())["entries"][0]["status"] == "approved"
    entry = await _entry(console, xswl)
    assert entry is not None and entry.decided_by == "bot-admin" and entry.meaning == "笑死"
    bad = await console.client.post(
        "/api/jargon/decide", json={"ids": "x", "action": "approve"}, headers=headers
    )
    assert bad.status == 400 and "ids" in (await bad.json())["error"]
    assert (await console.client.get("/api/jargon?status=nope", headers=headers)).status == 400
    shown = await (await console.client.get(f"/api/jargon/{xswl}", headers=headers)).json()
    assert [r["actor"] for r in shown["reviews"]] == ["bot-admin"]
    missing = await console.client.get("/api/jargon/9999", headers=headers)
    assert missing.status == 404 and "9999" in (await missing.json())["error"]
    partly_known = await console.client.post(
        "/api/jargon/decide", json={"ids": [awsl_id, 9999], "action": "reject"}, headers=headers
    )
    assert partly_known.status == 400 and "9999" in (await partly_known.json())["error"]
    awsl = await _entry(console, awsl_id)
    assert awsl is not None and awsl.status == "candidate", "a batch with an unknown id decides nothing"


async def test_hostile_chat_text_is_escaped_everywhere(console: Console) -> None:
    memory = console.app.memory
    await memory.record(
        make_message(1, text=f"看这个 {HOSTILE}", sender_name='<img src=x onerror="alert(1)">')
    )
    ids = await record(memory, 2, [f"{HOSTILE} again", f"and {HOSTILE}"])
    chat = await console.chat_id()
    entry = await mine(memory, chat, HOSTILE, ids)
    async with console.app.db.write() as session:
        session.add(history_row(chat, f"theme {HOSTILE}", count=1))
    await console.login()
    pages = [
        "/",
        f"/chats/{chat}",
        "/jargon",
        f"/jargon/{entry}",
        f"/chats/{chat}/messages/{ids[0]}",
        f"/chats/{chat}/people",
        f"/chats/{chat}/topics",
        f"/jargon?search={HOSTILE}",
        f"/?msg={HOSTILE}",
    ]
    for path in pages:
        response = await console.client.get(path)
        body = await response.text()
        assert response.status == 200, path
        assert "<script>" not in body and "<img" not in body, path
    assert "&lt;script&gt;" in await (await console.client.get(f"/jargon/{entry}")).text()


async def test_an_rtl_override_in_member_text_cannot_reorder_the_page_around_it(console: Console) -> None:
    """Message text (stored as sent) and names from before names lost their bidirectional controls
    were put into the page bare: an RTL override in one turned the rest of its line around (the
    other aliases after it, the words after a name). They are isolated in <bdi> now."""
    memory = console.app.memory
    spoof = "\u202e我是管理员\u202c"
    recorded = await memory.record(make_message(1, text=f"看 {spoof} 哈", sender_card="小红"))
    chat = await console.chat_id()
    assert recorded.person_id is not None
    async with console.app.db.write() as session:  # an alias kept by an older Qunyi
        session.add(
            PersonAlias(
                person_id=recorded.person_id,
                chat_id=chat,
                alias=f"{spoof}阿红",
                alias_key="我是管理员阿红",
                source="card",
                weight=1.0,
                count=1,
                first_seen=T0.timestamp(),
                last_seen=T0.timestamp(),
            )
        )
    stored = await memory.recent(chat, 1)
    assert stored[0].text == f"看 {spoof} 哈", "the message is kept as it was sent"
    await console.login()
    for path in (f"/chats/{chat}", f"/chats/{chat}/messages/{stored[0].id}", f"/chats/{chat}/people"):
        body = await (await console.client.get(path)).text()
        assert spoof in body, path
        outside = re.sub(r"<bdi[^>]*>.*?</bdi>", "", body, flags=re.DOTALL)
        assert "\u202e" not in outside, path
    people = await (await console.client.get(f"/chats/{chat}/people")).text()
    assert (
        f"<bdi>{spoof}阿红</bdi>, <bdi>name-u1</bdi>" in people
        or f"<bdi>name-u1</bdi>, <bdi>{spoof}阿红</bdi>" in people
    )


async def test_topics_and_forgetting_preview_change_nothing(console: Console) -> None:
    await console.app.memory.record(make_message(1))
    chat = await console.chat_id()
    async with console.app.db.write() as session:
        rows = [history_row(chat, f"火锅局 {i}", count=i) for i in range(8)]
        session.add_all(rows)
        await session.flush()
        await index_rows(session, "chat_history_fts", [(r.id, r.theme) for r in rows])
    await console.login()
    topics = await (await console.client.get(f"/chats/{chat}/topics")).text()
    assert all(f"火锅局 {i}" in topics for i in range(8)) and "周末吃火锅" in topics
    preview = await (await console.client.get("/forgetting")).text()
    # 8 rows past stage 1's age at 25% per end: counts 0, 1, 6 and 7 would go.
    assert all(f"火锅局 {i}" in preview for i in (0, 1, 6, 7))
    assert "nothing forgotten yet" in preview
    again = await (await console.client.get(f"/chats/{chat}/topics")).text()
    assert all(f"火锅局 {i}" in again for i in range(8)), "the preview is a dry run"
    assert "火锅局 0" in await (await console.client.get(f"/forgetting?chat={chat}")).text()
    unknown = await console.client.get(f"/forgetting?chat={chat + 99}")
    assert unknown.status == 404 and f"no chat {chat + 99}" in await unknown.text()


async def test_forget_a_person_through_the_web(console: Console) -> None:
    app = console.app
    await app.memory.record_many([make_message(n, sender="u1", text=f"hello {n}") for n in range(3)])
    await app.memory.record(make_message(5, sender="u2", text="hi"))
    await app.memory.record(make_message(6, chat="g2", sender="u1", text="elsewhere"))
    chat = await console.chat_id()
    persons = app.persons
    assert persons is not None
    person = next(r for r in await persons.records(chat) if r.platform_user_id == "u1")
    await persons.admin.set_fact(chat, person.person_id, "city", "杭州", now=app.clock.now())
    await persons.admin.add_alias(chat, person.person_id, "小红", now=app.clock.now())
    csrf = await console.login()
    base = f"/chats/{chat}/people/{person.person_id}"
    shown = await (await console.client.get(base)).text()
    assert "杭州" in shown and "小红" in shown
    confirm = await (await console.client.get(f"{base}/forget")).text()
    assert "cannot be undone" in confirm
    assert "also delete their 4 raw messages (in every chat; 3 in this one)" in confirm
    response = await console.client.post(f"{base}/forget", data={"_csrf": csrf, "confirm": "yes"})
    assert response.status == 200 and "forgot #" in await response.text()
    after = await persons.record(chat, person.person_id)
    assert after is not None and after.facts == [] and not any(a.alias == "小红" for a in after.aliases)
    assert len(await app.memory.recent(chat, 10)) == 4, "raw messages stay unless asked"
    other = next(r for r in await persons.records(chat) if r.platform_user_id == "u2")
    renamed = await console.client.post(
        f"/chats/{chat}/people/{other.person_id}/rename", data={"_csrf": csrf, "name": "阿明"}
    )
    assert renamed.status == 200
    assert (await persons.record(chat, other.person_id)).name == "阿明"  # type: ignore[union-attr]


async def test_merging_an_account_through_the_web_needs_the_tick_and_a_member_of_the_chat(
    console: Console,
) -> None:
    memory, persons = console.app.memory, console.app.persons
    assert persons is not None
    await memory.record(make_message(1, sender="u1", text="我是小红"))
    await memory.record(make_message(2, sender="u3", text="小红的小号"))
    await memory.record(make_message(3, chat="g2", sender="u4", text="别的群"))
    chat, elsewhere = await console.chat_id(), await console.chat_id("test:g2")
    ids = {r.platform_user_id: r.person_id for r in await persons.records(chat)}
    [stranger] = [r.person_id for r in await persons.records(elsewhere)]
    csrf = await console.login()
    merge = f"/chats/{chat}/people/{ids['u1']}/merge"
    unticked = await console.client.post(merge, data={"_csrf": csrf, "merged": str(ids["u3"])})
    assert unticked.status == 400 and "really merge" in await unticked.text()
    outside = await console.client.post(
        merge, data={"_csrf": csrf, "merged": str(stranger), "confirm": "yes"}
    )
    assert (
        outside.status == 400 and f"person {stranger} is not a member of chat {chat}" in await outside.text()
    )
    assert len(await persons.records(chat)) == 2 and len(await persons.records(elsewhere)) == 1
    merged = await console.client.post(
        merge, data={"_csrf": csrf, "merged": str(ids["u3"]), "confirm": "yes"}
    )
    assert merged.status == 200 and f"merged #{ids['u3']} into #{ids['u1']}" in await merged.text()
    assert [r.person_id for r in await persons.records(chat)] == [ids["u1"]]


async def test_notes_edit_round_trip(console: Console) -> None:
    await console.app.memory.record(make_message(1))
    chat = await console.chat_id()
    csrf = await console.login()
    created = await console.client.post(f"/chats/{chat}/notes", data={"_csrf": csrf, "name": "聚餐"})
    assert created.status == 200
    saved = await console.client.post(
        f"/chats/{chat}/notes/聚餐", data={"_csrf": csrf, "content": f"周六 [[火锅]] {HOSTILE}"}
    )
    assert saved.status == 200 and "&lt;script&gt;" in await saved.text()
    notes = console.app.memory.notes
    assert notes is not None
    assert await notes.for_chat("test:g1").get("聚餐") == f"周六 [[火锅]] {HOSTILE}"
    assert await notes.global_scope().list() == [], "a chat's note stays in its chat"
    listed = await (await console.client.get(f"/chats/{chat}/notes")).text()
    assert "聚餐" in listed
    bad = await console.client.post(f"/chats/{chat}/notes", data={"_csrf": csrf, "name": "../x"})
    assert bad.status == 400


async def test_usage_page_shows_every_task(console: Console) -> None:
    await console.login()
    body = await (await console.client.get("/usage")).text()
    assert all(task in body for task in ("reply", "topic", "summary", "jargon", "person"))
    assert "enabled = false" in body


def _section_rows(body: str, heading: str) -> list[list[str]]:
    """The cells of the table under `<h2>heading</h2>` (its header row left out), tags dropped, entities
    read."""
    section = body.split(f"<h2>{heading}</h2>", 1)[1].split("<h2>", 1)[0].split("</thead>", 1)[1]
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", section)
    ]


async def test_overview_shows_the_work_waiting_for_a_model(console: Console) -> None:
    await add_offline_work(console.app.db)
    await console.login()
    body = await (await console.client.get("/")).text()
    off = "LLM disabled ([llm] enabled = false)"
    assert _section_rows(body, "Offline work") == [
        ["topics packed offline, to re-digest", "history_redigest", "3", "1", "[topics] llm_summary = false"],
        [
            "people's message chunks read offline, to relearn",
            "person_relearn",
            "2",
            "1",
            f"the person model: {off}",
        ],
        ["jargon terms due for inference", "jargon_mining", "2", "—", f"the jargon model: {off}"],
    ]
    [check] = [row for row in _section_rows(body, "Checks") if row[0] == "offline work"]
    assert check[1] == "info" and "jargon terms due for inference 2" in check[2]


async def test_config_page_masks_secrets(console: Console) -> None:
    await console.login()
    body = await (await console.client.get("/config")).text()
    assert "sk-very-secret-key" not in body and TOKEN not in body
    assert "api_key = &quot;•••• (set)&quot;" in body
    assert "QUNYI_LLM_API_KEY" in body, "the name of the key's variable is not a secret"
    assert "total_tokens = 3000" in body


async def test_a_broken_config_is_refused_on_reload_and_the_old_one_stays(console: Console) -> None:
    csrf = await console.login()
    console.config_path.write_text("[context]\ntotal_tokens = 5\n", encoding="utf-8")
    refused = await console.client.post("/config/reload", data={"_csrf": csrf})
    text = await refused.text()
    assert refused.status == 400 and "Reload refused" in text
    assert "config.toml:2: context.total_tokens" in text, "the error names the line and key"
    assert console.app.settings.context.total_tokens == 3000
    console.config_path.write_text("[context]\ntotal_tokens = 4000\n", encoding="utf-8")
    accepted = await console.client.post("/config/reload", data={"_csrf": csrf})
    assert accepted.status == 200 and "config reloaded" in await accepted.text()
    assert console.app.settings.context.total_tokens == 4000
    assert console.app.memory.context_settings.total_tokens == 4000, "listeners heard the reload"


async def test_a_reload_that_sets_a_new_token_rotates_the_console_token(console: Console) -> None:
    csrf = await console.login()
    console.config_path.write_text('[web]\ntoken = "rotated-token-Q7"\n', encoding="utf-8")
    reloaded = await console.client.post("/config/reload", data={"_csrf": csrf}, allow_redirects=False)
    assert reloaded.status == 303
    old = await console.client.get("/api/jargon", headers={"Authorization": f"Bearer {TOKEN}"})
    assert old.status == 401, "the old token stops working"
    assert (await console.client.get("/")).status == 401, "so does the old token's session cookie"
    new = await console.client.get("/api/jargon", headers={"Authorization": "Bearer rotated-token-Q7"})
    assert new.status == 200


async def test_json_api_refuses_out_of_range_and_malformed_input_with_json_errors(console: Console) -> None:
    entries = await _entries(console)
    assert 1 in entries, "`true` would be read as entry 1"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    huge = 10**23
    for path in (
        f"/api/jargon?offset={huge}",
        f"/api/jargon?chat={huge}",
        f"/api/jargon/{huge}",
        "/api/jargon?limit=-1",
    ):
        response = await console.client.get(path, headers=headers)
        assert response.status == 400, path
        assert response.content_type == "application/json" and "error" in await response.json(), path
    assert (await console.client.get(f"/chats/{huge}/topics", headers=headers)).status == 400
    for body in (
        '{"ids": [true], "action": "reject"}',
        f'{{"ids": [{huge}], "action": "reject"}}',
        "[" * 100_000,
    ):
        response = await console.client.post(
            "/api/jargon/decide", data=body, headers=headers | {"Content-Type": "application/json"}
        )
        assert response.status == 400 and "error" in await response.json(), body[:40]
    assert [(await _entry(console, i)).status for i in entries] == ["candidate"] * 2  # type: ignore[union-attr]
    for wildcard in ("%", "_"):
        listed = await (await console.client.get(f"/api/jargon?search={wildcard}", headers=headers)).json()
        assert listed["entries"] == [], f"{wildcard!r} is a character, not a wildcard"


async def test_long_text_wraps_and_the_review_trail_shows_readable_times(console: Console) -> None:
    xswl, _ = await _entries(console)
    csrf = await console.login()
    url = "https://example.com/" + "a" * 200
    await console.client.post(f"/jargon/{xswl}/approve", data={"_csrf": csrf, "meaning": url})
    shown = await (await console.client.get(f"/jargon/{xswl}")).text()
    assert f'<td class="long"><bdi>{url}</bdi></td>' in shown, "a long meaning may wrap inside its cell"
    assert "td.long{min-width:12em}" in shown and "td.long,.hit{overflow-wrap:anywhere}" in shown
    assert (
        '<td class="long"><bdi>approved</bdi></td>' not in shown and "<td><bdi>approved</bdi></td>" in shown
    )
    async with console.app.db.read() as session:
        trail = await dictionary.reviews(session, xswl)
    assert f"<td><bdi>{when(trail[-1]['time'])}</bdi></td>" in shown
    assert f"{trail[-1]['time']:.0f}" not in shown


async def test_client_errors_are_pages_with_the_console_around_them(console: Console) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    for path, status, message in (
        ("/chats/999/topics", 404, "no chat 999"),
        ("/chats/1/notes/missing", 404, "no chat 1"),
        ("/jargon?min_count=abc", 400, "min_count must be a whole number"),
        ("/no-such-page", 404, "Not Found"),
    ):
        response = await console.client.get(path, headers=headers)
        body = await response.text()
        assert response.status == status, path
        assert response.content_type == "text/html", path
        assert message in body and "Qunyi admin" in body, path
    wrong_method = await console.client.put("/jargon", headers=headers)
    assert wrong_method.status == 405 and "GET" in wrong_method.headers["Allow"]


async def test_saving_a_note_that_changed_since_the_page_was_opened_loses_neither_text(
    console: Console,
) -> None:
    await console.app.memory.record(make_message(1))
    chat = await console.chat_id()
    notes = console.app.memory.notes
    assert notes is not None
    store = notes.for_chat("test:g1")
    await store.set("聚餐", "周六火锅")
    csrf = await console.login()
    opened = await (await console.client.get(f"/chats/{chat}/notes/聚餐")).text()
    version = re.search(r'name="version" value="([0-9a-f]+)"', opened)
    assert version is not None
    await store.append("聚餐", "改到周日")  # the bot writes while the admin edits
    stale = {"_csrf": csrf, "content": "周六火锅，七点", "version": version.group(1)}
    refused = await console.client.post(f"/chats/{chat}/notes/聚餐", data=stale)
    body = await refused.text()
    assert refused.status == 409 and "was changed since this edit started" in body
    assert "改到周日" in body and "周六火锅，七点</textarea>" in body, "both texts are on the page"
    assert await store.get("聚餐") == "周六火锅\n\n改到周日\n"
    again = re.search(r'name="version" value="([0-9a-f]+)"', body)
    assert again is not None
    merged = {"_csrf": csrf, "content": "周日火锅，七点", "version": again.group(1)}
    saved = await console.client.post(f"/chats/{chat}/notes/聚餐", data=merged)
    assert saved.status == 200 and await store.get("聚餐") == "周日火锅，七点"
    await store.delete("聚餐")
    gone = await console.client.post(f"/chats/{chat}/notes/聚餐", data=merged)
    assert gone.status == 409 and "was deleted" in await gone.text()
    assert await store.list() == [], "a save does not bring back a note deleted meanwhile"


def _textarea_value(page: str, name: str) -> str:
    """What a browser puts in the text area: its text, less the one line break HTML drops after
    the start tag."""
    found = re.search(rf'<textarea name="{name}"[^>]*>(.*?)</textarea>', page, re.S)
    assert found is not None, name
    value = html.unescape(found.group(1))
    return value[1:] if value.startswith("\n") else value


async def test_a_note_that_starts_with_a_line_break_keeps_it_through_the_editor(console: Console) -> None:
    await console.app.memory.record(make_message(1))
    chat = await console.chat_id()
    notes = console.app.memory.notes
    assert notes is not None
    store = notes.for_chat("test:g1")
    text = "\n\n## 规则\n不许刷屏 <b>"
    await store.set("规则", text)
    csrf = await console.login()
    opened = await (await console.client.get(f"/chats/{chat}/notes/规则")).text()
    assert _textarea_value(opened, "content") == text
    version = re.search(r'name="version" value="([0-9a-f]+)"', opened)
    assert version is not None
    form = {"_csrf": csrf, "content": _textarea_value(opened, "content"), "version": version.group(1)}
    saved = await console.client.post(f"/chats/{chat}/notes/规则", data=form)
    assert saved.status == 200 and await store.get("规则") == text, "saving unchanged changes nothing"


async def test_the_review_list_pages_through_every_entry_under_its_filters(console: Console) -> None:
    terms = [f"梗{n}" for n in range(7)]
    async with console.app.db.write() as session:
        for term in terms:
            await dictionary.add_manual(session, term, "", None, "test", T0.timestamp())
        await dictionary.add_manual(session, "被拒", "", None, "test", T0.timestamp(), status="rejected")
    await console.login()
    seen: list[str] = []
    path: str | None = "/jargon?status=approved&limit=3"
    pages = 0
    while path is not None:
        body = await (await console.client.get(path)).text()
        seen += re.findall(r'<a href="/jargon/\d+">([^<]+)</a>', body)
        following = re.search(r'<a href="([^"]+)">next →</a>', body)
        path = html.unescape(following.group(1)) if following else None
        if path is not None:
            assert "status=approved" in path and "limit=3" in path, "the next page keeps the filters"
        pages += 1
    assert pages == 3 and sorted(seen) == sorted(terms), "every entry is reachable, none twice"
    last = await (await console.client.get("/jargon?status=approved&limit=3&offset=6")).text()
    assert "entries 7–7" in last and "← previous" in last and 'offset=3"' in last


async def test_any_extra_query_parameter_is_carried_along_not_a_server_error(console: Console) -> None:
    async with console.app.db.write() as session:
        for term in ("梗1", "梗2"):
            await dictionary.add_manual(session, term, "", None, "test", T0.timestamp())
    await console.login()
    response = await console.client.get("/jargon?path=x&limit=1")
    body = await response.text()
    assert response.status == 200 and "梗1" in body
    assert 'name="back" value="/jargon?path=x&amp;limit=1"' in body
    assert 'href="/jargon?path=x&amp;limit=1&amp;offset=1"' in body


async def test_an_entry_named_twice_in_one_decision_is_decided_once(console: Console) -> None:
    xswl, awsl = await _entries(console)
    csrf = await console.login()
    checked = await _checkboxes(console)
    batch = await console.client.post(
        "/jargon/batch", data={"_csrf": csrf, "action": "approve", "ids": [checked[xswl], checked[xswl]]}
    )
    assert batch.status == 200 and "approved 1 entries" in await batch.text()
    api = await console.client.post(
        "/api/jargon/decide",
        json={"ids": [awsl, awsl], "action": "reject"},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert [e["id"] for e in (await api.json())["entries"]] == [awsl]
    async with console.app.db.write() as session:
        assert [r["action"] for r in await dictionary.reviews(session, xswl)] == ["approve"]
        assert [r["action"] for r in await dictionary.reviews(session, awsl)] == ["reject"]
        assert await dictionary.remove(session, [xswl, xswl], "test", T0.timestamp()) == 1


async def test_a_long_api_actor_is_cut_on_a_grapheme_boundary(console: Console) -> None:
    xswl, _awsl = await _entries(console)
    family = "👨‍👩‍👧‍👦"  # one grapheme of seven code points
    response = await console.client.post(
        "/api/jargon/decide",
        json={"ids": [xswl], "action": "approve", "by": "ab" + family * 9},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert response.status == 200
    assert (await response.json())["entries"][0]["decided_by"] == "ab" + family * 8
    bad = await console.client.get(f"/jargon?chat={family * 3}", headers={"Authorization": f"Bearer {TOKEN}"})
    assert bad.status == 400 and html.escape(repr(family * 2 + "…")) in await bad.text()


async def test_a_reload_names_the_settings_the_console_applies_only_after_a_restart(
    console: Console,
) -> None:
    """The reload button said "the new settings are in force" when [storage] or [web] port changed,
    while the console went on with the database and port of its start."""
    csrf = await console.login()
    console.config_path.write_text(
        '[storage]\ndata_dir = "elsewhere"\n[web]\nport = 9999\n[context]\ntotal_tokens = 4000\n',
        encoding="utf-8",
    )
    reloaded = await console.client.post("/config/reload", data={"_csrf": csrf})
    text = await reloaded.text()
    assert reloaded.status == 200 and "in force" not in text
    assert "config reloaded, but storage, web.port take effect only after a restart" in text
    assert console.app.memory.context_settings.total_tokens == 4000
    console.config_path.write_text(CONFIG, encoding="utf-8")
    put_back = await console.client.post("/config/reload", data={"_csrf": csrf})
    assert "config reloaded: the new settings are in force" in await put_back.text()


async def test_the_pages_of_a_chat_merged_away_lead_to_the_chat_it_went_into(console: Console) -> None:
    """A merged chat's pages (bookmarks, links in the jargon review, a page left open) were a bare 404
    after `qunyi chats merge`; they now lead to the same page of the chat it went into, a form posted
    from one is posted there, and where a chat is asked for by id otherwise the page says where it
    went. The console's token is still needed first."""
    memory = console.app.memory
    await memory.record(make_message(1, chat="g1", text="周六爬山"))
    await memory.record(make_message(2, chat="g2", text="超级群"))
    old, new = await console.chat_id("test:g1"), await console.chat_id("test:g2")
    assert memory.notes is not None
    await memory.notes.for_chat("test:g1").set("计划", "周六爬山")
    await merge_chats(console.app.db, old, new, now=T0.timestamp(), notes=memory.notes)
    client = console.client
    assert (await client.get(f"/chats/{old}/topics", allow_redirects=False)).status == 401
    csrf = await console.login()
    moved = await client.get(f"/chats/{old}/people?x=1", allow_redirects=False)
    assert (moved.status, moved.headers["Location"]) == (307, f"/chats/{new}/people?x=1")
    home = await client.get(f"/chats/{old}")
    assert home.status == 200 and "周六爬山" in await home.text() and f"/chats/{new}" in str(home.url)
    note = await client.get(f"/chats/{old}/notes/%E8%AE%A1%E5%88%92")
    assert note.status == 200 and "周六爬山" in await note.text()
    saved = await client.post(f"/chats/{old}/notes/新笔记", data={"_csrf": csrf, "content": "带上水"})
    assert saved.status == 200 and await memory.notes.for_chat("test:g2").get("新笔记") == "带上水"
    asked = await client.get(f"/forgetting?chat={old}")
    assert asked.status == 404 and f"was merged into chat {new} (test:g2)" in await asked.text()


async def test_a_chat_merged_before_its_id_was_kept_gets_a_404_that_says_it_may_have_been_merged(
    console: Console,
) -> None:
    """A merge made before 0013_redirect_chat_ids kept FROM's platform key but not its database id, so
    `/chats/<old id>` cannot be followed: it was a bare 'no chat N'. It now says the chat may have been
    merged and where to look; with no such merge the 404 stays plain."""
    memory = console.app.memory
    await memory.record(make_message(1, chat="g1", text="周六爬山"))
    await memory.record(make_message(2, chat="g2", text="超级群"))
    old, new = await console.chat_id("test:g1"), await console.chat_id("test:g2")
    await console.login()
    plain = await console.client.get(f"/chats/{old + 5}/topics")
    assert plain.status == 404 and "may have been merged" not in await plain.text()
    await merge_chats(console.app.db, old, new, now=T0.timestamp())
    async with console.app.db.write() as session:  # as an older Qunyi recorded the merge
        await session.execute(update(ChatRedirect).values(from_chat_id=None))
    for path in (f"/chats/{old}/topics", f"/forgetting?chat={old}"):
        page = await console.client.get(path, allow_redirects=False)
        text = html.unescape(await page.text())
        assert page.status == 404 and f"no chat {old}; it may have been merged into another chat" in text
        assert "`qunyi chats list` shows the chats merged into each one (merged_from)" in text


async def test_text_that_is_not_unicode_and_a_revision_that_is_no_number_are_refused_not_a_500(
    console: Console,
) -> None:
    """An escaped lone surrogate in the API's meaning or "by", or in a pasted JSON dictionary, reached
    SQLite and failed with a 500; so did a form's revision of a digit Python does not read ("²") or of
    more digits than it converts (found by the QA pass)."""
    xswl, _awsl = await _entries(console)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    for body in (
        f'{{"ids": [{xswl}], "action": "approve", "meaning": "笑\\ud800死"}}',
        f'{{"ids": [{xswl}], "action": "approve", "by": "\\udc00me"}}',
    ):
        response = await console.client.post("/api/jargon/decide", data=body, headers=headers)
        assert response.status == 400, body
        assert "lone surrogate" in (await response.json())["error"]
    csrf = await console.login()
    pasted = await console.client.post(
        "/jargon/import",
        data={"_csrf": csrf, "text": '{"\\ud83d": "半个表情", "yyds": "永远的神"}', "format": "json"},
    )
    assert pasted.status == 200 and "1 created" in await pasted.text()
    for revision in ("²", "9" * 5000):
        for action in ("approve", "edit"):
            response = await console.client.post(
                f"/jargon/{xswl}/{action}", data={"_csrf": csrf, "meaning": "m", "revision": revision}
            )
            assert response.status == 400 and "revision must be" in await response.text(), (action, revision)
    entry = await _entry(console, xswl)
    assert entry is not None and (entry.status, entry.meaning, entry.provenance) == ("candidate", "", "mined")


async def test_a_control_character_in_a_hand_added_term_or_meaning_is_refused(console: Console) -> None:
    """`/jargon/add` took a NUL as a term (found by the QA pass): it shows as nothing on the page and in
    the prompt. A meaning keeps its line breaks."""
    csrf = await console.login()
    for content, meaning in (("\x00", ""), ("开\x00炉", "开始打游戏"), ("开炉", "开始\x07打游戏")):
        refused = await console.client.post(
            "/jargon/add", data={"_csrf": csrf, "content": content, "meaning": meaning}
        )
        assert refused.status == 400 and "control character" in await refused.text(), (content, meaning)
    added = await console.client.post(
        "/jargon/add", data={"_csrf": csrf, "content": "开炉", "meaning": "开始\n打游戏"}
    )
    assert added.status == 200
    async with console.app.db.read() as session:
        entries = await dictionary.list_entries(session)
    assert [(e.content, e.meaning) for e in entries] == [("开炉", "开始\n打游戏")]


async def test_the_bot_s_own_account_is_never_forgotten_through_the_web(console: Console) -> None:
    """Forgetting the bot's own account erased its side of every conversation from memory."""
    app = console.app
    await app.memory.record(make_message(1, sender="u1", text="周六去爬山吗"))
    await app.memory.record(make_message(2, sender="bot", text="好呀，我记下了", is_bot=True))
    chat = await console.chat_id()
    persons = app.persons
    assert persons is not None
    bot = next(r for r in await persons.records(chat) if r.platform_user_id == "bot")
    await persons.admin.add_alias(chat, bot.person_id, "群忆", now=app.clock.now())
    csrf = await console.login()
    base = f"/chats/{chat}/people/{bot.person_id}"
    assert "Forget this person" not in await (await console.client.get(base)).text()
    confirm = await console.client.get(f"{base}/forget")
    refused = await console.client.post(f"{base}/forget", data={"_csrf": csrf, "confirm": "yes"})
    says = f"#{bot.person_id} (account bot) is the bot&#x27;s own account"
    assert confirm.status == 400 and says in await confirm.text()
    assert refused.status == 400 and says in await refused.text()
    after = await persons.record(chat, bot.person_id)
    assert after is not None and any(a.alias == "群忆" for a in after.aliases), "nothing was forgotten"


async def test_an_approve_meeting_a_database_locked_past_the_busy_timeout_is_a_503_changing_nothing(
    tmp_path: Path,
) -> None:
    """It used to be aiohttp's bare 500 ("Server got itself in trouble") and a traceback in the log."""
    async with serving(tmp_path, CONFIG + "[storage]\nbusy_timeout_ms = 200\n") as console:
        xswl, _ = await _entries(console)
        csrf = await console.login()
        approve = {"_csrf": csrf, "meaning": "笑死我了"}
        with database_locked(console.app.db.path):
            refused = await console.client.post(f"/jargon/{xswl}/approve", data=approve)
        said = html.unescape(await refused.text())
        assert refused.status == 503
        assert f"database {console.app.db.path} stayed locked for over 200 ms; nothing was changed" in said
        entry = await _entry(console, xswl)
        assert entry is not None and (entry.status, entry.meaning) == ("candidate", "")
        again = await console.client.post(f"/jargon/{xswl}/approve", data=approve)
        assert again.status == 200
        entry = await _entry(console, xswl)
        assert entry is not None and (entry.status, entry.meaning) == ("approved", "笑死我了")


async def only_member(console: Console, text: str) -> tuple[int, PersonMemory, PersonRecord]:
    """Chat g1 where u1 said `text`: its id, people's memory, and u1."""
    await console.app.memory.record(make_message(1, sender="u1", text=text))
    chat = await console.chat_id()
    persons = console.app.persons
    assert persons is not None
    [person] = await persons.records(chat)
    return chat, persons, person


async def test_a_rename_from_a_page_opened_before_another_rename_is_refused_not_last_wins(
    console: Console,
) -> None:
    """Two admins open the same person's page and rename them: the second rename carried the name's
    revision as its page showed it, and is refused (409, nothing saved) instead of silently undoing the
    first; reloading the page gives the new revision and the rename goes through."""
    chat, persons, person = await only_member(console, "大家好")
    csrf = await console.login()
    base = f"/chats/{chat}/people/{person.person_id}"

    async def seen() -> str:
        [revision] = re.findall(
            r'name="revision" value="(\d+)"', await (await console.client.get(base)).text()
        )
        return revision

    first, second = await seen(), await seen()
    renamed = await console.client.post(
        f"{base}/rename", data={"_csrf": csrf, "name": "阿明", "revision": first}
    )
    assert renamed.status == 200
    stale = await console.client.post(
        f"{base}/rename", data={"_csrf": csrf, "name": "小明", "revision": second}
    )
    body = await stale.text()
    assert stale.status == 409 and "阿明" in body and "changed since you opened the page" in body
    assert (await persons.record(chat, person.person_id)).name == "阿明"  # type: ignore[union-attr]
    again = await console.client.post(
        f"{base}/rename", data={"_csrf": csrf, "name": "小明", "revision": first}
    )
    assert again.status == 409, "a form sent twice (the back button) renames once"
    fresh = await console.client.post(
        f"{base}/rename", data={"_csrf": csrf, "name": "小明", "revision": await seen()}
    )
    assert fresh.status == 200
    assert (await persons.record(chat, person.person_id)).name == "小明"  # type: ignore[union-attr]
    bad = await console.client.post(f"{base}/rename", data={"_csrf": csrf, "name": "x", "revision": "²"})
    assert bad.status == 400 and "revision must be a whole number" in await bad.text()


async def test_a_person_page_words_qunyi_s_own_timeline_lines_in_the_chat_s_language(
    console: Console,
) -> None:
    """Found by a QA pass: the console's timeline showed "群名片改为「…」" in an English chat."""
    app = console.app
    said = ["anyone up for hiking on Saturday morning?", "we could take the early train", "new boots!"]
    cards = ["Lily", "Lily", "Lily the Hiker"]
    await app.memory.record_many(
        make_message(n, sender="u1", text=text, sender_card=card)
        for n, (text, card) in enumerate(zip(said, cards, strict=True))
    )
    await app.memory.record(make_message(5, chat="g2", sender="u1", text="周六去爬山吗", sender_card="莉莉"))
    await app.memory.record(
        make_message(6, chat="g2", sender="u1", text="买了新鞋", sender_card="爬山的莉莉")
    )
    persons = app.persons
    assert persons is not None
    await console.login()
    for key, line, other in [
        ("test:g1", "group card changed to “Lily the Hiker” (was “Lily”)", "群名片"),
        ("test:g2", "群名片改为「爬山的莉莉」(原「莉莉」)", "group card changed"),
    ]:
        chat = await console.chat_id(key)
        [person] = await persons.records(chat)
        shown = html.unescape(
            await (await console.client.get(f"/chats/{chat}/people/{person.person_id}")).text()
        )
        assert line in shown and other not in shown, key


async def test_a_fact_s_values_are_added_and_removed_one_at_a_time_through_the_web(console: Console) -> None:
    """The console showed facts but could not change them; it now adds one value and removes one, with
    the operations `qunyi people edit --add-fact/--remove-fact KEY=VALUE` use."""
    chat, persons, person = await only_member(console, "hello")
    await persons.admin.add_fact(chat, person.person_id, "likes", "猫", now=console.app.clock.now())
    csrf = await console.login()
    base = f"/chats/{chat}/people/{person.person_id}"
    shown = await (await console.client.get(base)).text()
    assert f'action="{base}/facts/add"' in shown and f'action="{base}/facts/remove"' in shown
    added = await console.client.post(
        f"{base}/facts/add", data={"_csrf": csrf, "key": "likes", "value": "狗"}
    )
    assert added.status == 200 and "added likes = 狗" in await added.text()
    wrong = await console.client.post(f"{base}/facts/add", data={"_csrf": csrf, "key": "age", "value": "20"})
    assert wrong.status == 400 and "age holds one value at a time" in await wrong.text()
    removed = await console.client.post(
        f"{base}/facts/remove", data={"_csrf": csrf, "key": "likes", "value": "猫"}
    )
    assert removed.status == 200 and "removed likes = 猫" in await removed.text()
    again = await console.client.post(
        f"{base}/facts/remove", data={"_csrf": csrf, "key": "likes", "value": "猫"}
    )
    assert again.status == 400 and "no fact likes = 猫 to remove (its values: 狗)" in await again.text()
    record = await persons.record(chat, person.person_id)
    assert record is not None and [(f.key, f.value) for f in record.facts] == [("likes", "狗")]


async def test_a_members_meaning_is_listed_with_its_chats_count_beside_the_shared_entry(
    console: Console,
) -> None:
    """The list showed B's entry holding a member's meaning as count 0 beside the shared entry mining
    counts; it shows B's count of the term and links the shared entry, as `GET /api/jargon` says."""
    _a, b, shared, own = await explained_in_b(console.app.memory)
    await console.login()
    listed = await (await console.client.get("/jargon")).text()
    row = next(r for r in listed.split("<tr>") if f'value="{own}:' in r)
    cells = re.findall(r"<td>(.*?)</td>", row)
    assert cells[2] == str(len(USES) + 1)
    assert f'<a href="/jargon/{shared}">#{shared}</a>' in cells[6] and f"/chats/{b}" in cells[6]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    api = {
        e["id"]: e
        for e in (await (await console.client.get("/api/jargon", headers=headers)).json())["entries"]
    }
    assert (api[own]["count"], api[own]["shared_id"], api[shared]["shared_id"]) == (
        len(USES) + 1,
        shared,
        None,
    )
    page = await (await console.client.get(f"/jargon/{own}")).text()
    assert f'beside global <a href="/jargon/{shared}">' in page
