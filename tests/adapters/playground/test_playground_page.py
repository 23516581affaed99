"""The playground page in a real browser (headless Chromium) against the real bot: its memory on a
temporary SQLite database, its reply model the fake OpenAI server on loopback. Every wait is one of
Playwright's expectations (or the response the page waits for), never a sleep."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Locator, Page, Route, expect

from adapters.playground.event import sender_id
from bot.llm import LLMSettings
from memory.token_throttle import FAILED_TOKENS, WINDOW_SECONDS
from tests.adapters.playground.conftest import TOKEN, Bot, make_config, running_bot
from tests.fakes.openai_server import Answer, FakeOpenAI

pytestmark = pytest.mark.asyncio(loop_scope="module")

REPLY = "周五晚上九点开炉。"
POLL_MS = 1_500  # page.js's
WAIT_MS = 30_000  # two loaded cores: generous, and never a reason to pass


@pytest_asyncio.fixture(loop_scope="module")
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        server.default = lambda _body: Answer(REPLY)
        yield server


def answering(model: FakeOpenAI) -> LLMSettings:
    """The bot's reply model: the fake server."""
    return LLMSettings(enabled=True, base_url=model.base_url, model="fake-chat", max_retries=0)


@pytest_asyncio.fixture(loop_scope="module")
async def bot(tmp_path: Path, model: FakeOpenAI) -> AsyncIterator[Bot]:
    async with running_bot(tmp_path / "data", llm=answering(model)) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A fresh tab in a fresh context (no storage from another test); the test fails if the page's
    script throws."""
    expect.set_options(timeout=WAIT_MS)
    context = await browser.new_context(locale="zh-CN")
    context.set_default_timeout(WAIT_MS)
    tab = await context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield tab
    finally:
        await context.close()
    assert errors == [], f"the page's script threw: {errors}"


async def open_page(page: Page, bot: Bot, token: str = TOKEN) -> None:
    await page.goto(f"{bot.playground.base}/#token={token}")


def texts(page: Page) -> Locator:
    """The texts of the messages the transcript shows, in order."""
    return page.locator("#transcript .msg .text")


def message(page: Page, text: str) -> Locator:
    """The transcript's message whose text is `text`."""
    return page.locator("#transcript .msg").filter(has=page.locator(".text", has_text=text))


async def pick_chat(page: Page, label: str) -> None:
    await page.select_option("#chat", label=label)


async def be(page: Page, user: str) -> None:
    await page.fill("#user", user)


async def send(page: Page, text: str | None = None) -> tuple[int, Any]:
    """Type `text` (None: what the box holds) and press Enter; the status and body of the post once
    the bot has handled it."""
    if text is not None:
        await page.fill("#text", text)
    async with page.expect_response(
        lambda r: r.url.endswith("/api/messages") and r.request.method == "POST"
    ) as answered:
        await page.press("#text", "Enter")
    response = await answered.value
    return response.status, await response.json()


async def add_chat(page: Page, chat: str, kind: str = "group") -> None:
    await page.fill("#new-chat-id", chat)
    await page.select_option("#new-chat-kind", kind)
    await page.click("#new-chat button")


async def change(page: Page, text: str, tool: str, answer: str | None = None) -> int:
    """Click the edit or delete tool (`tool` its title) of the message `text`, answer the page's
    prompt with `answer` (or accept its confirmation); the status of the change once handled."""

    async def reply(dialog: Any) -> None:
        await (dialog.accept(answer) if answer is not None else dialog.accept())

    page.once("dialog", reply)
    async with page.expect_response(lambda r: r.request.method in ("PATCH", "DELETE")) as answered:
        await message(page, text).get_by_title(tool).click()
    return (await answered.value).status


async def test_chinese_text_and_the_bots_answer_show_in_the_transcript(
    page: Page, bot: Bot, model: FakeOpenAI
) -> None:
    await open_page(page, bot)
    await expect(page.locator("#chat")).to_have_value("g1\ngroup")
    await be(page, "小红")
    said = "今晚开黑吗？九点，老地方！（别迟到）"
    assert (await send(page, said))[0] == 200
    await expect(texts(page)).to_have_text([said])
    await expect(message(page, said).locator(".who")).to_have_text("小红")
    asked = "@群忆 周五几点开炉？"
    status, body = await send(page, asked)
    assert status == 200 and body["message"]["to_bot"], body
    await expect(texts(page)).to_have_text([said, asked, REPLY])
    answer = message(page, REPLY)
    await expect(answer).to_have_class("msg bot")
    await expect(answer.locator(".who")).to_have_text("群忆 (bot)")
    await expect(answer.locator(".quote")).to_have_text("↪ " + asked)
    await expect(page.locator("#status")).to_have_text("")
    assert sorted(m.text for m in await bot.stored("g1")) == sorted([said, asked, REPLY])
    [request] = model.chat_requests
    assert "周五几点开炉" in " ".join(str(m.get("content")) for m in request.messages)


async def test_an_at_of_a_member_who_posted_in_the_chat_mentions_them(page: Page, bot: Bot) -> None:
    await open_page(page, bot)
    await be(page, "bob")
    assert (await send(page, "周六有空，去爬山吗？"))[0] == 200
    await be(page, "alice")
    named = "@bob 以后就叫你波波吧。"
    assert (await send(page, named))[0] == 200
    await expect(texts(page)).to_have_text(["周六有空，去爬山吗？", named])
    stored = {m.text: m.mentions for m in await bot.stored("g1")}
    assert stored == {"周六有空，去爬山吗？": (), named: (sender_id("bob"),)}


async def test_a_member_edits_and_deletes_their_own_messages_and_memory_follows(page: Page, bot: Bot) -> None:
    await open_page(page, bot)
    await be(page, "alice")
    for said in ("周六下午三点去爬山", "银行卡密码是蓝色大象"):
        assert (await send(page, said))[0] == 200
    await be(page, "bob")
    assert (await send(page, "好的，我也去"))[0] == 200
    await expect(message(page, "好的，我也去").get_by_title("edit")).to_be_visible()
    await expect(message(page, "周六下午三点去爬山").get_by_title("edit")).to_be_hidden()
    await be(page, "alice")
    assert await change(page, "周六下午三点去爬山", "edit", "周日上午十点去爬山") == 200
    await expect(texts(page)).to_have_text(["周日上午十点去爬山", "银行卡密码是蓝色大象", "好的，我也去"])
    await expect(message(page, "周日上午十点去爬山").locator(".meta")).to_contain_text("edited")
    assert await change(page, "银行卡密码是蓝色大象", "delete") == 200
    await expect(texts(page)).to_have_text(["周日上午十点去爬山", "好的，我也去"])
    assert sorted(m.text for m in await bot.stored("g1")) == sorted(["周日上午十点去爬山", "好的，我也去"])


async def test_a_refused_post_shows_its_error_and_keeps_the_text(page: Page, bot: Bot) -> None:
    await open_page(page, bot)
    await be(page, "长" * 33)
    status, body = await send(page, "这条不该发出去。")
    assert status == 400, body
    await expect(page.locator("#status")).to_contain_text("user is 33 characters, over the limit of 32")
    await expect(page.locator("#text")).to_have_value("这条不该发出去。")
    await be(page, "alice")
    await page.press("#text", "Enter")
    await expect(texts(page)).to_have_text(["这条不该发出去。"])
    await expect(page.locator("#status")).to_have_text("")
    assert [m.text for m in await bot.stored("g1")] == ["这条不该发出去。"]


async def test_a_wrong_token_is_shown_and_the_right_address_then_works(page: Page, bot: Bot) -> None:
    assert (await bot.playground.post(chat_id="g1", user="bob", text="有人在吗？"))[0] == 200
    await open_page(page, bot, token="wrong-token")
    await expect(page.locator("#status")).to_contain_text("Authorization: Bearer")
    await expect(texts(page)).to_have_count(0)
    await open_page(page, bot)
    await expect(texts(page)).to_have_text(["有人在吗？"])
    await expect(page.locator("#status")).to_have_text("")


COUNT_API_CALLS = """
window.apiCalls = 0;
const fetchOfThePage = window.fetch;
window.fetch = (...call) => { window.apiCalls += 1; return fetchOfThePage(...call); };
"""


async def counting_api_calls(page: Page) -> None:
    """Count the page's calls (window.apiCalls) and put its timers on a clock the test moves."""
    await page.add_init_script(COUNT_API_CALLS)
    await page.clock.install()


async def test_a_tab_with_a_wrong_token_stops_asking_and_never_locks_its_address_out(
    page: Page, bot: Bot
) -> None:
    """A tab left open on an earlier run's random token polled on with it: within 15 s it had sent the
    10 wrong tokens that lock its address out, the right address opened beside it included."""
    await counting_api_calls(page)
    await open_page(page, bot, token="wrong-token")
    await expect(page.locator("#status")).to_contain_text("Authorization: Bearer")
    asked = await page.evaluate("window.apiCalls")
    await page.clock.run_for(POLL_MS * FAILED_TOKENS * 2)
    await page.fill("#text", "还在吗")
    await page.press("#text", "Enter")
    await expect(page.locator("#status")).to_contain_text("Authorization: Bearer")
    await expect(page.locator("#text")).to_have_value("还在吗")
    assert await page.evaluate("window.apiCalls") == asked
    assert (await bot.playground.call("GET", "/api/chats"))[0] == 200


async def test_a_tab_without_a_token_never_calls_the_api(page: Page, bot: Bot) -> None:
    await counting_api_calls(page)
    await page.goto(bot.playground.base + "/")
    await expect(page.locator("#status")).to_contain_text("no access token")
    await page.clock.run_for(POLL_MS * FAILED_TOKENS * 2)
    await expect(page.locator("#status")).to_contain_text("no access token")
    assert await page.evaluate("window.apiCalls") == 0


async def test_a_refused_address_waits_the_time_it_is_told_before_asking_again(page: Page, bot: Bot) -> None:
    for _ in range(FAILED_TOKENS):  # another client, on the same address, guessed
        assert (await bot.playground.call("GET", "/api/chats", token="wrong"))[0] == 401
    await counting_api_calls(page)
    await open_page(page, bot)
    await expect(page.locator("#status")).to_contain_text("too many wrong tokens from this address")
    asked = await page.evaluate("window.apiCalls")
    await page.clock.run_for(POLL_MS * FAILED_TOKENS * 2)
    assert await page.evaluate("window.apiCalls") == asked
    await page.clock.run_for(int(WINDOW_SECONDS * 1000))
    assert await page.evaluate("window.apiCalls") > asked


async def test_switching_chats_never_shows_another_chats_messages(page: Page, bot: Bot) -> None:
    await open_page(page, bot)
    await be(page, "alice")
    assert (await send(page, "一群的暗号是蓝色大象"))[0] == 200
    await expect(texts(page)).to_have_text(["一群的暗号是蓝色大象"])
    await pick_chat(page, "g2 · group")
    await expect(texts(page)).to_have_count(0)
    assert (await send(page, "二群：今晚不开黑"))[0] == 200
    await expect(texts(page)).to_have_text(["二群：今晚不开黑"])
    await pick_chat(page, "dm · private")
    assert (await send(page, "私聊：在吗？"))[0] == 200
    await expect(texts(page)).to_have_text(["私聊：在吗？", REPLY])
    await pick_chat(page, "g1 · group")
    await expect(texts(page)).to_have_text(["一群的暗号是蓝色大象"])
    assert [m.text for m in await bot.stored("g2")] == ["二群：今晚不开黑"]


async def test_a_reload_shows_what_the_api_keeps(page: Page, bot: Bot) -> None:
    await open_page(page, bot)
    await be(page, "alice")
    for said in ("第一条", "第二条，要删掉", "第三条"):
        assert (await send(page, said))[0] == 200
    assert await change(page, "第一条", "edit", "第一条（改过）") == 200
    assert await change(page, "第二条，要删掉", "delete") == 200
    await page.fill("#new-chat-id", "新群")
    await page.click("#new-chat button")
    await be(page, "bob")
    assert (await send(page, "新群里的第一句话"))[0] == 200
    await expect(texts(page)).to_have_text(["新群里的第一句话"])
    await page.reload()
    await expect(page.locator("#chat")).to_have_value("新群\ngroup")
    await expect(page.locator("#user")).to_have_value("bob")
    await expect(texts(page)).to_have_text(["新群里的第一句话"])
    await pick_chat(page, "g1 · group")
    await expect(texts(page)).to_have_text(["第一条（改过）", "第三条"])
    await expect(message(page, "第一条（改过）").locator(".meta")).to_contain_text("edited")


async def test_clicking_a_message_replies_to_it_and_a_reply_to_the_bot_addresses_it(
    page: Page, bot: Bot, model: FakeOpenAI
) -> None:
    await open_page(page, bot)
    await be(page, "alice")
    asked = "@群忆 周五几点开炉？<b>不是粗体</b>"
    assert (await send(page, asked))[0] == 200
    await expect(texts(page)).to_have_text([asked, REPLY])
    await expect(page.locator("#transcript b")).to_have_count(0)
    await message(page, REPLY).click()
    await expect(page.locator("#replying")).to_have_text("replying to 群忆: " + REPLY + " ×")
    status, body = await send(page, "好的，谢谢！")
    assert status == 200 and body["message"]["to_bot"] and body["message"]["reply_to"], body
    await expect(page.locator("#replying")).to_be_hidden()
    await expect(texts(page)).to_have_text([asked, REPLY, "好的，谢谢！", REPLY])
    await expect(message(page, "好的，谢谢！").locator(".quote")).to_have_text("↪ " + REPLY)
    assert len(model.chat_requests) == 2


async def test_a_name_typed_with_blanks_around_it_or_decomposed_still_owns_its_messages(
    page: Page, bot: Bot
) -> None:
    await open_page(page, bot)
    await be(page, " Zoe\u0308 ")  # the server takes it as "Zoë": stripped, NFC
    assert (await send(page, "前后有空格的名字"))[0] == 200
    await expect(message(page, "前后有空格的名字").locator(".who")).to_have_text("Zo\u00eb")
    assert await change(page, "前后有空格的名字", "edit", "名字两边的空格不算") == 200
    await expect(texts(page)).to_have_text(["名字两边的空格不算"])


async def test_a_name_memory_would_show_otherwise_is_refused_and_the_text_stays_to_post_again(
    page: Page, bot: Bot
) -> None:
    """A name holding a character that shows nothing (a Persian ZWNJ, a zero-width space) was taken,
    but memory drops such characters from names, so the page showed the messages under another name
    than the one typed: its own messages had no edit or delete tools, and 小红 and 小<ZWSP>红, two
    members, looked like one. Such a name is refused, saying why, and the text is not lost."""
    await open_page(page, bot)
    for name in ("\u0645\u062d\u0645\u062f\u200c\u0631\u0636\u0627", "小\u200b红"):
        await be(page, name)
        status, body = await send(page, "名字里有看不见的字")
        assert status == 400 and "user must not hold characters that show nothing" in body["error"], body
        await expect(page.locator("#text")).to_have_value("名字里有看不见的字")
    await expect(texts(page)).to_have_count(0)
    assert await bot.stored("g1") == []


async def test_a_post_the_bot_failed_to_handle_stays_shown_and_is_not_offered_again(
    page: Page, bot: Bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("context broken")

    monkeypatch.setattr(bot.app.memory, "context_for_reply", broken)
    await open_page(page, bot)
    asked = "@群忆 这条会让机器人出错"
    status, body = await send(page, asked)
    assert status == 500 and body["message"]["text"] == asked, body
    await expect(page.locator("#status")).to_contain_text("failed to handle")
    await expect(texts(page)).to_have_text([asked])
    await expect(page.locator("#text")).to_have_value("")


async def test_a_poll_answered_after_leaving_the_chat_and_coming_back_loses_nothing(
    page: Page, bot: Bot
) -> None:
    await open_page(page, bot)
    for said in ("第一句", "第二句"):
        assert (await send(page, said))[0] == 200
    await expect(texts(page)).to_have_text(["第一句", "第二句"])
    held: asyncio.Queue[Route] = asyncio.Queue()
    polls_of_g1 = "**/api/chats/g1/messages?*"
    await page.route(polls_of_g1, held.put_nowait)
    stale = [await asyncio.wait_for(held.get(), WAIT_MS / 1000)]  # a poll after what is shown
    assert not stale[0].request.url.endswith("after=0")
    await pick_chat(page, "g2 · group")
    await expect(texts(page)).to_have_count(0)
    await pick_chat(page, "g1 · group")
    fresh: list[Route] = []
    while not fresh:  # the poll of the chat shown again, from the start
        route = await asyncio.wait_for(held.get(), WAIT_MS / 1000)
        (fresh if route.request.url.endswith("after=0") else stale).append(route)
    for route in stale:  # the old poll's answer comes first
        async with page.expect_event("requestfinished", lambda r, route=route: r == route.request):
            await route.continue_()
    for route in fresh:
        await route.continue_()
    await page.unroute(polls_of_g1)  # lets the polls held since go on
    await expect(texts(page)).to_have_text(["第一句", "第二句"])


async def test_a_chat_no_address_could_read_is_refused_by_the_page_and_the_api(page: Page, bot: Bot) -> None:
    await open_page(page, bot)
    await expect(page.locator("#chat")).to_have_value("g1\ngroup")
    for dots in ("..", "."):
        await page.fill("#new-chat-id", dots)
        await page.click("#new-chat button")
        await expect(page.locator("#status")).to_contain_text("cannot be '.' or '..'")
        await expect(page.locator("#chat")).to_have_value("g1\ngroup")
        status, body = await bot.playground.post(chat_id=dots, user="alice", text="点点群")
        assert status == 400 and "must not be '.' or '..'" in body["error"], body
    assert await bot.stored("..") == [] and await bot.stored(".") == []


async def test_a_chat_added_as_the_other_kind_is_shown_as_the_kind_it_is(page: Page, bot: Bot) -> None:
    assert (await bot.playground.post(chat_id="g1", user="bob", text="一群是群聊"))[0] == 200
    await open_page(page, bot)
    await expect(texts(page)).to_have_text(["一群是群聊"])
    await add_chat(page, "g1", "private")
    await expect(page.locator("#status")).to_have_text("chat 'g1' is a group chat in this run")
    await expect(page.locator("#chat")).to_have_value("g1\ngroup")
    await expect(page.locator("#chat option")).to_have_text(["g1 · group", "g2 · group", "dm · private"])
    await expect(texts(page)).to_have_text(["一群是群聊"])
    await page.reload()
    await expect(page.locator("#chat")).to_have_value("g1\ngroup")


async def test_a_post_refused_for_the_kind_memory_holds_leaves_the_page_on_the_chat_as_it_is(
    page: Page, tmp_path: Path
) -> None:
    async with running_bot(tmp_path / "data") as earlier:
        assert (await earlier.playground.post(chat_id="老群", user="bob", text="上次说的"))[0] == 200
    async with running_bot(tmp_path / "data") as bot:
        await open_page(page, bot)
        await add_chat(page, "老群", "private")
        await expect(page.locator("#chat")).to_have_value("老群\nprivate")
        status, body = await send(page, "这句该发到群里")
        assert status == 409 and body["chat_kind"] == "group", body
        await expect(page.locator("#status")).to_have_text(body["error"])
        await expect(page.locator("#chat")).to_have_value("老群\ngroup")
        await expect(page.locator("#chat option", has_text="老群")).to_have_text(["老群 · group"])
        await expect(page.locator("#text")).to_have_value("这句该发到群里")
        assert (await send(page))[0] == 200
        await expect(texts(page)).to_have_text(["这句该发到群里"])
        assert [m.text for m in await bot.stored("老群")] == ["上次说的", "这句该发到群里"]
        await page.reload()
        await expect(page.locator("#chat")).to_have_value("老群\ngroup")


async def test_the_note_of_dropped_messages_belongs_to_the_chat_it_was_shown_for(
    page: Page, tmp_path: Path
) -> None:
    async with running_bot(tmp_path / "data", playground=make_config(keep_messages=2)) as bot:
        for said in ("第一句", "第二句", "第三句"):
            assert (await bot.playground.post(chat_id="g1", user="bob", text=said))[0] == 200
        await open_page(page, bot)
        dropped = page.get_by_text("older messages were dropped")
        await expect(texts(page)).to_have_text(["第二句", "第三句"])
        await expect(dropped).to_be_visible()
        await pick_chat(page, "g2 · group")
        await expect(texts(page)).to_have_count(0)
        await expect(dropped).to_have_count(0)
        await expect(page.locator("#status")).to_have_text("")


async def test_the_user_name_is_kept_by_a_reload_right_after_typing_it(page: Page, bot: Bot) -> None:
    await open_page(page, bot)
    await be(page, "小明")
    await page.reload()
    await expect(page.locator("#user")).to_have_value("小明")


async def test_a_reply_quotes_the_message_as_it_now_reads(page: Page, bot: Bot) -> None:
    await open_page(page, bot)
    assert (await send(page, "周六下午三点去爬山"))[0] == 200
    await message(page, "周六下午三点去爬山").locator(".text").click()
    await be(page, "bob")
    assert (await send(page, "好，我带水"))[0] == 200
    quote = message(page, "好，我带水").locator(".quote")
    await expect(quote).to_have_text("↪ 周六下午三点去爬山")
    await be(page, "alice")
    assert await change(page, "周六下午三点去爬山", "edit", "周日上午十点去爬山") == 200
    await expect(quote).to_have_text("↪ 周日上午十点去爬山")
    await message(page, "周日上午十点去爬山").locator(".text").click()
    assert await change(page, "周日上午十点去爬山", "edit", "周日上午十一点去爬山") == 200
    await expect(page.locator("#replying-text")).to_have_text("replying to alice: 周日上午十一点去爬山")
    assert await change(page, "周日上午十一点去爬山", "delete") == 200
    await expect(quote).to_have_text("↪ (deleted)")
    await expect(page.locator("#replying")).to_be_hidden()
    await page.reload()
    await expect(quote).to_have_text("↪ (deleted)")


async def test_after_the_bot_restarts_the_page_starts_again_with_no_stale_error(
    page: Page, tmp_path: Path
) -> None:
    async with running_bot(tmp_path / "data") as first:
        port = urlsplit(first.playground.base).port
        await open_page(page, first)
        assert (await send(page, "重启前的话"))[0] == 200
        await message(page, "重启前的话").locator(".text").click()
        await expect(page.locator("#replying")).to_be_visible()
    await expect(page.locator("#status")).to_contain_text("no answer from the bot")
    async with running_bot(tmp_path / "data", playground=make_config(port=port)) as again:
        await expect(page.locator("#status")).to_have_text("")
        await expect(texts(page)).to_have_count(0)
        await expect(page.locator("#replying")).to_be_hidden()
        assert (await send(page, "重启后的话"))[0] == 200
        await expect(texts(page)).to_have_text(["重启后的话"])
        assert [m.text for m in await again.stored("g1")] == ["重启前的话", "重启后的话"]


async def test_shift_enter_starts_a_new_line_and_enter_sends(page: Page, bot: Bot) -> None:
    await open_page(page, bot)
    hint = re.compile(r"Shift\+Enter: new line")
    await expect(page.locator("#text")).to_have_attribute("placeholder", hint)
    await page.fill("#text", "第一行")
    await page.press("#text", "Shift+Enter")
    await page.locator("#text").press_sequentially("第二行")
    await expect(page.locator("#text")).to_have_value("第一行\n第二行")
    status, body = await send(page)
    assert status == 200 and body["message"]["text"] == "第一行\n第二行", body
    await expect(texts(page).first).to_have_js_property("textContent", "第一行\n第二行")


async def test_long_unbroken_text_and_names_wrap_on_a_narrow_screen(page: Page, bot: Bot) -> None:
    await page.set_viewport_size({"width": 360, "height": 640})
    await open_page(page, bot)
    await be(page, "W" * 32)
    link = "https://example.com/" + "a" * 150
    assert (await send(page, link))[0] == 200
    await message(page, link).locator(".text").click()
    assert (await send(page, "收到，这个链接好长"))[0] == 200
    await message(page, link).locator(".text").click()
    await expect(message(page, "收到，这个链接好长").locator(".quote")).to_be_visible()
    await expect(page.locator("#replying")).to_be_visible()
    width = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    assert await page.evaluate(width) == 0, "nothing sticks out sideways"


async def test_an_emoji_name_over_the_limit_is_refused_not_cut(page: Page, bot: Bot) -> None:
    await open_page(page, bot)
    await be(page, "🐱" * 33)
    status, body = await send(page, "猫猫来了")
    assert status == 400 and "user is 33 characters" in body["error"], body
    await be(page, "🐱猫")
    assert (await send(page))[0] == 200
    await expect(message(page, "猫猫来了").locator(".who")).to_have_text("🐱猫")
    await expect(message(page, "猫猫来了").get_by_title("edit")).to_be_visible()
    await be(page, "bob")
    assert (await send(page, "@🐱猫 一起玩吗"))[0] == 200
    assert {m.text: m.mentions for m in await bot.stored("g1")}["@🐱猫 一起玩吗"] == (sender_id("🐱猫"),)
