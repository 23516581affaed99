"""The admin console in a real browser (headless Chromium), as an admin uses it: the console served
on a loopback port over a real App (SQLite in a temporary folder) with some chat, people, jargon,
topics and a note recorded. Every test also checks what the browser did with the console's headers:
no Content-Security-Policy violation, and no request anywhere but the console itself. Every wait is
one of Playwright's expectations, never a sleep."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio
from aiohttp import web
from playwright.async_api import Browser, BrowserContext, ConsoleMessage, Locator, Page, expect
from sqlalchemy import update

from bot.app import App, build_app
from bot.config import ConfigStore
from bot.web.app import build_web_app
from bot.web.security import COOKIE, FLASH_COOKIE
from memory.chat_merge import merge_chats
from memory.clock import ManualClock
from memory.jargon import dictionary
from memory.models import PersonAlias, PersonChatName
from memory.storage.fts import index_rows
from tests.bot.web.conftest import CONFIG, TOKEN, history_row
from tests.conftest import T0, chat_ids, make_message
from tests.memory.jargon.jargon_helpers import mine, record

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT_MS = 30_000  # two loaded cores: generous, and never a reason to pass
HOSTILE = "<script>alert('x')</script><img src=x>"
SPOOF = "\u202e我是管理员"  # an RTL override that nothing closes
LONG = "周末一起去吃火锅吧，" * 60 + "https://example.com/" + "a" * 300
REPORT_CSP = """document.addEventListener("securitypolicyviolation", (e) =>
  console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI}`));"""


@dataclass
class Icon:
    """What the console answered to the browser's own requests for its icon (a browser asks every
    site for `/favicon.ico`; Playwright does not report those requests, the server sees them)."""

    statuses: list[int] = field(default_factory=list)
    asked: asyncio.Event = field(default_factory=asyncio.Event)

    async def note(self, request: web.Request, response: web.StreamResponse) -> None:
        if request.path == "/favicon.ico":
            self.statuses.append(response.status)
            self.asked.set()


@dataclass
class Console:
    """The console served on loopback, the App under it, and what `qunyi web` prints to log in."""

    app: App
    base: str
    config_path: Path
    icon: Icon
    chats: dict[str, int] = field(default_factory=dict)
    people: dict[str, int] = field(default_factory=dict)
    jargon: dict[str, int] = field(default_factory=dict)

    @property
    def login_link(self) -> str:
        return f"{self.base}/?token={TOKEN}"


async def _seed(console: Console) -> None:
    """Two chats; in g1 people u1..u3 (u3 a second account of u1), jargon candidates, a hostile
    message, a long one, a packed topic and a note."""
    memory = console.app.memory
    await memory.record(make_message(1, sender="u1", sender_name="小红", text=LONG, chat_name="周末群"))
    await memory.record(make_message(2, sender="u2", sender_name="阿明", text=f"看 {SPOOF} 哈 {HOSTILE}"))
    await memory.record(make_message(3, sender="u3", sender_name="小红的小号", text="我是小号"))
    await memory.record(make_message(4, chat="g2", sender="u2", text="超级群", chat_name="超级群"))
    xswl = await record(memory, 10, ["xswl 笑死", "真的xswl"])
    awsl = await record(memory, 12, ["awsl", "awsl 好可爱"])
    g1, g2 = await chat_ids(memory, "g1", "g2")
    console.chats = {"g1": g1, "g2": g2}
    persons = console.app.persons
    assert persons is not None
    console.people = {r.platform_user_id: r.person_id for r in await persons.records(g1)}
    console.jargon = {
        "xswl": await mine(memory, g1, "xswl", xswl),
        "awsl": await mine(memory, g1, "awsl", awsl),
    }
    async with console.app.db.write() as session:
        entry, _created = await dictionary.add_manual(
            session, "开炉", "", g1, "test", T0.timestamp(), status="candidate"
        )
        console.jargon["开炉"] = entry.id
        topic = history_row(g1, "周末火锅局", count=3)
        session.add(topic)
        await session.flush()
        await index_rows(session, "chat_history_fts", [(topic.id, topic.theme)])
    assert memory.notes is not None
    await memory.notes.for_chat("test:g1").set("聚餐", "周六晚上 [[火锅]]，七点见")


@pytest_asyncio.fixture(loop_scope="module")
async def console(tmp_path: Path) -> AsyncIterator[Console]:
    """The console as `qunyi web` serves it, on a free loopback port."""
    config_path = tmp_path / "config.toml"
    config_path.write_text(CONFIG, encoding="utf-8")
    app = await build_app(
        ConfigStore.load(config_path), tmp_path / "data", ManualClock(T0), watch_config=False
    )
    icon = Icon()
    web_app = build_web_app(app, TOKEN)
    web_app.on_response_prepare.append(icon.note)
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        served = Console(app, f"http://127.0.0.1:{runner.addresses[0][1]}", config_path, icon)
        await _seed(served)
        yield served
    finally:
        await runner.cleanup()
        await app.close()


@dataclass
class Watch:
    """What the browser reported: console errors and warnings (CSP violations among them) and every
    URL it requested."""

    problems: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def heard(self, message: ConsoleMessage) -> None:
        # An HTTP error status is reported as "Failed to load resource"; the tests check statuses.
        if message.type in ("error", "warning") and not message.text.startswith("Failed to load resource"):
            self.problems.append(message.text)


@pytest_asyncio.fixture(loop_scope="module")
async def context(browser: Browser, console: Console) -> AsyncIterator[BrowserContext]:
    """A fresh browser context (no cookie from another test); after the test, no CSP violation, no
    request off the console's origin and no icon request the console could not answer may have
    happened in any of its tabs."""
    expect.set_options(timeout=WAIT_MS)
    fresh = await browser.new_context(locale="zh-CN", viewport={"width": 1000, "height": 800})
    fresh.set_default_timeout(WAIT_MS)
    await fresh.add_init_script(REPORT_CSP)
    watch = Watch()
    fresh.on("page", lambda tab: tab.on("console", watch.heard))
    fresh.on("request", lambda request: watch.requests.append(request.url))
    try:
        yield fresh
    finally:
        await fresh.close()
    assert watch.problems == [], f"the browser reported: {watch.problems}"
    elsewhere = [u for u in watch.requests if not u.startswith(console.base + "/")]
    assert elsewhere == [], f"requests off the console: {elsewhere}"
    assert watch.requests, "the browser requested nothing at all"
    assert set(console.icon.statuses) <= {200}, f"the icon was answered {console.icon.statuses}"


@pytest_asyncio.fixture(loop_scope="module")
async def page(context: BrowserContext) -> Page:
    return await context.new_page()


async def logged_in(page: Page, console: Console) -> None:
    """Open the printed login link and land on the overview."""
    await page.goto(console.login_link)
    await expect(page).to_have_url(console.base + "/")
    await expect(heading(page)).to_have_text("Overview")


def heading(page: Page) -> Locator:
    return page.locator("h1")


def flash(page: Page) -> Locator:
    return page.locator("p.flash")


def field_row(page: Page, name: str) -> Locator:
    """The value cell of the row `name` of an entry's field table."""
    return page.locator("tr", has=page.locator("td", has_text=re.compile(f"^{name}$"))).locator("td").nth(1)


async def test_the_printed_login_link_logs_in_and_the_cookie_keeps_the_admin_logged_in(
    page: Page, context: BrowserContext, console: Console
) -> None:
    await logged_in(page, console)
    await expect(page.get_by_role("link", name="周末群")).to_be_visible()
    [cookie] = await context.cookies()
    assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == (COOKIE, True, "Strict")
    assert TOKEN not in cookie["value"]
    await page.get_by_role("link", name="Jargon", exact=True).click()
    await expect(heading(page)).to_have_text("Jargon review")
    await page.get_by_role("link", name="Config").click()
    await expect(heading(page)).to_have_text("Config")
    await page.goto(f"{console.base}/chats/{console.chats['g1']}/topics")
    await expect(heading(page)).to_have_text("Topics of 周末群 (test:g1)")


async def test_a_login_link_followed_from_another_site_lands_logged_in(page: Page, console: Console) -> None:
    """The login answered with a redirect: a browser that followed the link from another site (a chat
    app in the browser, a wiki) does not send a SameSite=Strict cookie along a redirect that site
    started, so the admin landed on "Login needed", and a reload did not help."""
    await page.set_content(f'<a href="{console.login_link}">console</a>')
    await page.get_by_role("link", name="console").click()
    await expect(page).to_have_url(console.base + "/")
    await expect(heading(page)).to_have_text("Overview")
    await page.go_back()
    await expect(page).not_to_have_url(re.compile("token="))


async def test_the_browser_gets_the_console_icon_logged_out_and_logged_in(
    page: Page, console: Console
) -> None:
    """Browsers ask every site for /favicon.ico: the console answered a 401 before the login and a
    404 after it, in the browser and in the log."""
    refused = await page.goto(f"{console.base}/jargon")
    assert refused is not None and refused.status == 401
    await asyncio.wait_for(console.icon.asked.wait(), WAIT_MS / 1000)
    assert console.icon.statuses[:1] == [200], "asked for on the login-needed page, without a session"
    await logged_in(page, console)
    icon = await page.goto(f"{console.base}/favicon.ico")
    assert icon is not None and icon.status == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert "max-age=" in icon.headers["cache-control"] and "no-store" not in icon.headers["cache-control"]
    await expect(page.locator("svg")).to_be_visible()


async def test_a_wrong_token_shows_the_refusal_page(page: Page, console: Console) -> None:
    refused = await page.goto(f"{console.base}/?token=wrong")
    assert refused is not None and refused.status == 401
    await expect(heading(page)).to_have_text("Login needed")
    await expect(page.locator("p.error")).to_have_text("wrong token")
    again = await page.goto(f"{console.base}/jargon")
    assert again is not None and again.status == 401
    await expect(page.locator("p.error")).to_contain_text("open the link `qunyi web` printed")


async def test_jargon_review_filters_approves_rejects_and_edits_through_the_forms(
    page: Page, context: BrowserContext, console: Console
) -> None:
    await logged_in(page, console)
    await page.get_by_role("link", name="Jargon", exact=True).click()
    terms = page.locator("tbody tr td:nth-child(2)")
    await expect(terms).to_have_count(3)
    await page.get_by_label("term contains").fill("xs")
    await page.get_by_role("button", name="Filter").click()
    await expect(page).to_have_url(re.compile(r"/jargon\?.*search=xs"))
    await expect(terms).to_have_text(["xswl"])
    await page.get_by_role("link", name="xswl").click()
    xswl = f"{console.base}/jargon/{console.jargon['xswl']}"
    await expect(heading(page)).to_have_text("Jargon: xswl")
    await expect(page.locator("bdi.hit", has_text="真的xswl")).to_be_visible()  # its evidence
    await page.locator("form[action$='/approve']").get_by_label("meaning").fill("笑死我了")
    await page.get_by_role("button", name="Approve").click()
    await expect(page).to_have_url(xswl)  # the message is not in the address
    await expect(flash(page)).to_have_text("approved")
    await expect(field_row(page, "status")).to_have_text("approved")
    await expect(field_row(page, "meaning")).to_have_text("笑死我了")

    await page.reload()  # the forms of a reloaded page still carry a good CSRF token
    await expect(heading(page)).to_have_text("Jargon: xswl")
    await expect(flash(page)).to_have_count(0)  # shown once: a reload does not say "approved" again
    assert not [c for c in await context.cookies() if c["name"] == FLASH_COOKIE]
    await page.locator("form[action$='/edit'] textarea").fill("笑死我了（夸张）")
    await page.get_by_label("kind").select_option(label="group jargon")
    await page.get_by_role("button", name="Save edit").click()
    await expect(page).to_have_url(xswl)
    await expect(flash(page)).to_have_text("saved")
    await expect(field_row(page, "meaning")).to_have_text("笑死我了（夸张）")
    await expect(field_row(page, "kind")).to_have_text("jargon")

    second = await context.new_page()  # a second tab of the same session
    await second.goto(f"{console.base}/jargon/{console.jargon['awsl']}")
    await second.get_by_role("button", name="Reject").click()
    await expect(second).to_have_url(f"{console.base}/jargon/{console.jargon['awsl']}")
    await expect(flash(second)).to_have_text("rejected")
    await expect(field_row(second, "status")).to_have_text("rejected")

    await page.goto(f"{console.base}/jargon?status=candidate")
    await page.get_by_role("row", name="开炉").get_by_role("checkbox").check()
    await page.get_by_label("meaning for approved").fill("开始打游戏")
    await page.get_by_role("button", name="Approve selected").click()
    await expect(page).to_have_url(f"{console.base}/jargon?status=candidate")
    await expect(flash(page)).to_have_text("approved 1 entries")
    await expect(terms).to_have_count(0)
    async with console.app.db.read() as session:
        shown = {e.content: (e.status, e.meaning) for e in await dictionary.list_entries(session)}
    assert shown == {
        "xswl": ("approved", "笑死我了（夸张）"),
        "awsl": ("rejected", ""),
        "开炉": ("approved", "开始打游戏"),
    }


async def test_people_rename_merge_and_forget_through_the_forms(page: Page, console: Console) -> None:
    g1, people = console.chats["g1"], console.people
    await logged_in(page, console)
    await page.goto(f"{console.base}/chats/{g1}/people")
    await page.get_by_role("link", name=f"#{people['u2']}", exact=True).click()
    await expect(heading(page)).to_have_text(f"阿明 (#{people['u2']})")
    await page.get_by_label("name the bot uses here").fill("阿明哥")
    await page.get_by_role("button", name="Rename").click()
    await expect(page).to_have_url(f"{console.base}/chats/{g1}/people/{people['u2']}")
    await expect(flash(page)).to_have_text("renamed to \u2068阿明哥\u2069")
    await expect(heading(page)).to_have_text(f"阿明哥 (#{people['u2']})")

    await page.goto(f"{console.base}/chats/{g1}/people/{people['u1']}")
    await page.get_by_label("find a member by name or id").fill("小号")
    await page.get_by_role("button", name="Search").click()
    await page.get_by_role("link", name=f"#{people['u3']}", exact=True).click()
    merged = page.get_by_label("person id (#) to merge into this person")
    await expect(merged).to_have_value(str(people["u3"]))
    await page.get_by_label("really merge").check()
    await page.get_by_role("button", name="Merge").click()
    await expect(page).to_have_url(f"{console.base}/chats/{g1}/people/{people['u1']}")
    await expect(flash(page)).to_have_text(f"merged #{people['u3']} into #{people['u1']}")
    await expect(page.get_by_role("cell", name="小红的小号")).to_be_visible()  # its alias came along
    await page.goto(f"{console.base}/chats/{g1}/people")
    await expect(page.get_by_role("link", name=f"#{people['u3']}", exact=True)).to_have_count(0)

    await page.goto(f"{console.base}/chats/{g1}/people/{people['u2']}")
    await page.get_by_role("link", name="Forget this person…").click()
    await expect(heading(page)).to_have_text("Forget 阿明哥?")
    await expect(page.get_by_text("This cannot be undone")).to_be_visible()
    await page.get_by_role("button", name="Forget for good").click()
    await expect(page).to_have_url(f"{console.base}/chats/{g1}/people")
    await expect(flash(page)).to_contain_text(f"forgot #{people['u2']}")
    persons = console.app.persons
    assert persons is not None
    forgotten = await persons.record(g1, people["u2"])
    assert forgotten is None or not any(a.alias == "阿明哥" for a in forgotten.aliases)


async def test_notes_topics_forgetting_usage_and_config_pages_show_the_recorded_data(
    page: Page, console: Console
) -> None:
    g1 = console.chats["g1"]
    await logged_in(page, console)
    await page.goto(f"{console.base}/chats/{g1}")
    await page.get_by_role("link", name="notes", exact=True).click()
    await page.get_by_role("link", name="聚餐").click()
    await expect(heading(page)).to_have_text("Note: 聚餐")
    await expect(page.locator("textarea[name=content]")).to_have_value("周六晚上 [[火锅]]，七点见")
    await page.get_by_role("link", name="topics", exact=True).click()
    await expect(page.get_by_role("cell", name="周末火锅局")).to_be_visible()
    await expect(page.get_by_role("cell", name="周末吃火锅")).to_be_visible()
    await page.get_by_role("link", name="forgetting", exact=True).click()
    await expect(heading(page)).to_have_text("Forgetting")
    await expect(page.get_by_text("nothing forgotten yet")).to_be_visible()
    await page.get_by_role("link", name="LLM usage").click()
    await expect(page.get_by_role("cell", name="reply", exact=True)).to_be_visible()
    await page.get_by_role("link", name="Config").click()
    await expect(page.locator("pre")).to_contain_text("total_tokens = 3000")
    console.config_path.write_text("[context]\ntotal_tokens = 4000\n", encoding="utf-8")
    await page.get_by_role("button", name="Reload config from the file").click()
    await expect(flash(page)).to_have_text("config reloaded: the new settings are in force")
    await expect(page.locator("pre")).to_contain_text("total_tokens = 4000")


async def _left(page: Page, scope: Locator, text: str) -> float:
    """Where on the screen the text `text` inside `scope` starts (its leftmost x)."""
    x = await scope.evaluate(
        """(root, text) => {
             const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
             for (let node = walker.nextNode(); node; node = walker.nextNode()) {
               const at = node.data.indexOf(text);
               if (at < 0) continue;
               const range = document.createRange();
               range.setStart(node, at);
               range.setEnd(node, at + text.length);
               return Math.min(...[...range.getClientRects()].map((r) => r.left));
             }
             return null;
           }""",
        text,
    )
    assert x is not None, f"{text!r} is not on the page"
    return float(x)


async def test_hostile_chat_text_shows_as_text_and_cannot_reorder_its_line(
    page: Page, console: Console
) -> None:
    g1, u1 = console.chats["g1"], console.people["u1"]
    async with console.app.db.write() as session:  # a name and an alias kept by an older Qunyi
        session.add(
            PersonAlias(
                person_id=u1, chat_id=g1, alias=f"{SPOOF}阿红", alias_key="我是管理员阿红", source="card",
                weight=9.0, count=1, first_seen=T0.timestamp(), last_seen=T0.timestamp(),
            )
        )  # fmt: skip
        await session.execute(
            update(PersonChatName).where(PersonChatName.person_id == u1).values(person_name=f"{SPOOF}红")
        )
    await logged_in(page, console)
    await page.goto(f"{console.base}/chats/{g1}")
    said = page.get_by_role("cell", name=re.compile("^看 "))
    await expect(said).to_have_text(f"看 {SPOOF} 哈 {HOSTILE}")
    await expect(page.locator("main script, main img")).to_have_count(0)
    wrapped = await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert wrapped, "the long message widens the page instead of wrapping"

    await page.goto(f"{console.base}/chats/{g1}/people")
    aliases = page.get_by_role("cell", name=re.compile("阿红"))
    assert await _left(page, aliases, ", ") > await _left(page, aliases, "阿红")
    await page.goto(f"{console.base}/chats/{g1}/people/{u1}")
    title = heading(page)
    await expect(title).to_contain_text(f"(#{u1})")
    assert await _left(page, title, f"(#{u1})") > await _left(page, title, "红")


async def test_the_old_address_of_a_merged_chat_leads_to_the_chat_it_went_into(
    page: Page, console: Console
) -> None:
    g1, g2 = console.chats["g1"], console.chats["g2"]
    await merge_chats(console.app.db, g1, g2, now=T0.timestamp(), notes=console.app.memory.notes)
    await logged_in(page, console)
    landed = await page.goto(f"{console.base}/chats/{g1}/people")
    assert landed is not None and landed.status == 200
    moved = landed.request.redirected_from
    assert moved is not None and (await moved.response()).status == 307  # type: ignore[union-attr]
    await expect(page).to_have_url(f"{console.base}/chats/{g2}/people")
    await expect(heading(page)).to_have_text("People of 超级群 (test:g2)")
    await expect(page.get_by_role("cell", name="小红", exact=True)).to_be_visible()
