"""The playground page in a real browser (headless Chromium) against the real bot: its memory on a
temporary SQLite database, its reply model the fake OpenAI server on loopback. Every wait is one of
Playwright's expectations (or the response the page waits for), never a sleep."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Locator, Page, Route, expect

from adapters.playground.event import sender_id
from bot.llm import LLMSettings
from tests.adapters.playground.conftest import TOKEN, Bot, running_bot
from tests.fakes.openai_server import Answer, FakeOpenAI

pytestmark = pytest.mark.asyncio(loop_scope="module")

REPLY = "周五晚上九点开炉。"
WAIT_MS = 30_000  # two loaded cores: generous, and never a reason to pass


@pytest_asyncio.fixture(loop_scope="module")
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        server.default = lambda _body: Answer(REPLY)
        yield server


@pytest_asyncio.fixture(loop_scope="module")
async def bot(tmp_path: Path, model: FakeOpenAI) -> AsyncIterator[Bot]:
    llm = LLMSettings(enabled=True, base_url=model.base_url, model="fake-chat", max_retries=0)
    async with running_bot(tmp_path / "data", llm=llm) as running:
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


async def send(page: Page, text: str) -> tuple[int, Any]:
    """Type `text` and press Enter; the status and body of the post once the bot has handled it."""
    await page.fill("#text", text)
    async with page.expect_response(
        lambda r: r.url.endswith("/api/messages") and r.request.method == "POST"
    ) as answered:
        await page.press("#text", "Enter")
    response = await answered.value
    return response.status, await response.json()


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
