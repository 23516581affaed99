"""End to end: the playground built from config, the real reply pipeline, the fake model on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapters.playground.adapter import NOT_ANSWERED, NOT_DELIVERED
from adapters.playground.event import sender_id
from bot.llm import LLMSettings
from tests.adapters.held import stop_waits
from tests.adapters.playground.conftest import running_bot
from tests.fakes.openai_server import Answer, FakeOpenAI, Hold
from tests.waiting import WAIT


async def test_a_member_addressing_the_bot_is_answered_in_that_chat_only(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    llm = LLMSettings(enabled=True, base_url=fake_llm.base_url, model="fake-chat", max_retries=0)
    fake_llm.script(Answer("周五晚上九点开炉"))
    async with running_bot(tmp_path / "data", llm=llm) as bot:
        playground = bot.playground
        assert (await playground.post(chat_id="g2", user="bob", text="暗号是蓝色大象"))[0] == 200
        status, body = await playground.post(chat_id="g1", user="alice", text="@群忆 周五几点开炉？")
        assert status == 200, body
        asked = body["message"]
        in_g1 = await playground.transcript("g1")
        in_g2 = await playground.transcript("g2")
    assert [(m["sender"], m["text"], m["is_bot"]) for m in in_g1] == [
        ("alice", "@群忆 周五几点开炉？", False),
        ("群忆", "周五晚上九点开炉", True),
    ]
    assert in_g1[1]["reply_to"] == asked["id"] and asked["to_bot"]
    assert [m["text"] for m in in_g2] == ["暗号是蓝色大象"], "the answer stays in the chat it answers"
    [request] = fake_llm.chat_requests
    prompt = " ".join(str(m.get("content")) for m in request.messages)
    assert "周五几点开炉" in prompt and "蓝色大象" not in prompt, "memory of g2 stays out of g1's prompt"


async def test_a_bot_failing_after_recording_a_message_answers_a_json_500_and_keeps_it(
    tmp_path: Path, fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm = LLMSettings(enabled=True, base_url=fake_llm.base_url, model="fake-chat", max_retries=0)
    async with running_bot(tmp_path / "data", llm=llm) as bot:

        async def broken(*_args: object, **_kwargs: object) -> None:
            raise RuntimeError("context broken")

        monkeypatch.setattr(bot.app.memory, "context_for_reply", broken)
        status, body = await bot.playground.post(chat_id="g1", user="alice", text="@群忆 周五几点开炉？")
        assert status == 500 and "failed to handle" in body["error"], body
        assert body["message"]["text"] == "@群忆 周五几点开炉？"
        assert [m["id"] for m in await bot.playground.transcript("g1")] == [body["message"]["id"]]
        assert [(m.platform_message_id, m.text) for m in await bot.stored("g1")] == [
            (body["message"]["id"], "@群忆 周五几点开炉？")
        ]
        assert fake_llm.chat_requests == []


async def test_a_chats_kind_holds_across_runs_on_one_data_directory(tmp_path: Path) -> None:
    async with running_bot(tmp_path / "data") as bot:
        post = bot.playground.post
        assert (await post(chat_id="g1", user="alice", text="第一次"))[0] == 200
        assert (await post(chat_id="dm", chat_kind="private", user="bob", text="私聊"))[0] == 200
    async with running_bot(tmp_path / "data") as bot:
        post = bot.playground.post
        for chat, kind, known in (("g1", "private", "group"), ("dm", "group", "private")):
            status, body = await post(chat_id=chat, chat_kind=kind, user="carol", text="换个身份")
            assert status == 409 and f"is a {known} chat in memory" in body["error"], body
            assert body["chat_kind"] == known, "the page goes to the chat as it is"
            assert await bot.playground.transcript(chat) == []
        assert [m.text for m in await bot.stored("g1")] == ["第一次"], "a refused post is not recorded"
        assert [m.text for m in await bot.stored("dm")] == ["私聊"]
        assert (await post(chat_id="g1", user="carol", text="还是群"))[0] == 200
        assert (await post(chat_id="dm", chat_kind="private", user="bob", text="在吗"))[0] == 200
        assert (await post(chat_id="g9", chat_kind="private", user="bob", text="新的"))[0] == 200


async def test_an_at_of_a_member_seen_in_that_chat_is_recorded_as_their_mention(tmp_path: Path) -> None:
    async with running_bot(tmp_path / "data") as bot:
        post = bot.playground.post
        assert (await post(chat_id="g1", user="bob", text="周六有空"))[0] == 200
        assert (await post(chat_id="g2", user="carol", text="我只在二群"))[0] == 200
        said = {
            "mentions bob": "@bob 以后就叫你波波吧",
            "full-width, CJK running on": "＠bob周六爬山吗",
            "carol was only seen in g2": "@carol 你在吗",
            "an address and a longer handle": "写信到 me@bob.example 或找 @bobby",
        }
        for text in said.values():
            assert (await post(chat_id="g1", user="alice", text=text))[0] == 200
        in_g2 = await post(chat_id="g2", user="carol", text="@bob 你在一群吗")
        assert in_g2[0] == 200
        stored = {m.text: m.mentions for m in await bot.stored("g1")}
        g1 = await bot.app.memory.chat("playground", "g1")
        assert g1 is not None and bot.app.persons is not None
        who = await bot.app.persons.who(g1.id, "波波")
        g2_mentions = [m.mentions for m in await bot.stored("g2")]
    bob = sender_id("bob")
    assert [stored[text] for text in said.values()] == [(bob,), (bob,), (), ()]
    assert stored["周六有空"] == ()
    assert g2_mentions == [(), ()], "bob was seen in g1 only: his name in g2 is text"
    assert [record.platform_user_id for record in who.records] == [bob], "the name given went to bob"


async def test_memory_follows_an_edit_and_a_deletion_made_on_the_page(tmp_path: Path) -> None:
    async with running_bot(tmp_path / "data") as bot:
        playground = bot.playground
        kept = (await playground.post(chat_id="g1", user="alice", text="周六下午三点去爬山"))[1]["message"]
        gone = (await playground.post(chat_id="g1", user="bob", text="银行卡密码是蓝色大象"))[1]["message"]
        chat = await bot.app.memory.chat("playground", "g1")
        assert chat is not None and await bot.app.memory.search([chat.id], "蓝色大象")
        at = "/api/chats/g1/messages/"
        edit = {"user": "alice", "text": "周日上午十点去爬山"}
        assert (await playground.call("PATCH", at + kept["id"], json=edit))[0] == 200
        assert (await playground.call("DELETE", at + gone["id"], json={"user": "bob"}))[0] == 200
        stored = [(m.platform_message_id, m.text) for m in await bot.stored("g1")]
        found = [hit.text for hit in await bot.app.memory.search([chat.id], "蓝色大象 银行卡密码")]
        refound = [hit.text for hit in await bot.app.memory.search([chat.id], "周日上午十点")]
    assert stored == [(kept["id"], "周日上午十点去爬山")], "the edit replaced the text; the deletion is gone"
    assert not any("蓝色大象" in text for text in found), found
    assert any("周日上午十点" in text for text in refound), refound


async def test_an_at_of_a_member_memory_knows_in_that_chat_mentions_them_after_a_restart(
    tmp_path: Path,
) -> None:
    async with running_bot(tmp_path / "data") as bot:
        post = bot.playground.post
        assert (await post(chat_id="g1", user="bob", text="周六有空"))[0] == 200
        assert (await post(chat_id="g2", user="carol", text="我只在二群"))[0] == 200
    async with running_bot(tmp_path / "data") as bot:
        post = bot.playground.post
        said = ["@bob 还记得周六吗", "@carol 你在一群吗", "@群忆 在吗"]
        for text in said:
            assert (await post(chat_id="g1", user="alice", text=text))[0] == 200
        edited = (await post(chat_id="g1", user="alice", text="找人"))[1]["message"]
        edit = {"user": "alice", "text": "＠bob周日也行"}
        at = f"/api/chats/g1/messages/{edited['id']}"
        assert (await bot.playground.call("PATCH", at, json=edit))[0] == 200
        stored = {m.text: m.mentions for m in await bot.stored("g1")}
        bot_id = bot.playground.adapter.bot_id
    bob = sender_id("bob")
    assert [stored[text] for text in said] == [(bob,), (), (bot_id,)], "carol is known in g2 only"
    assert stored["＠bob周日也行"] == (bob,), "an edit reads its mentions the same way"


async def test_a_forward_posted_on_the_page_is_treated_as_the_platforms_forwards(tmp_path: Path) -> None:
    """`forwarded: true` stores a forward: its @ of the bot addresses no one and its /recall runs no
    command (the same text posted as the member's own is answered), a name declared in it is not
    learnt, an edit keeps it a forward; a `forwarded` that is not true or false is a 400, nothing
    stored."""
    async with running_bot(tmp_path / "data") as bot:
        post, call = bot.playground.post, bot.playground.call
        assert (await post(chat_id="g1", user="bob", text="周六去九溪爬山"))[0] == 200
        status, body = await post(chat_id="g1", user="alice", text="@群忆 /recall 爬山", forwarded=True)
        assert status == 200 and body["message"]["forwarded"] is True, body
        assert not body["message"]["to_bot"]
        declared = (await post(chat_id="g1", user="alice", text="以后叫我老王", forwarded=True))[1]
        edit = {"user": "alice", "text": "以后叫我老王吧 @群忆"}
        at = f"/api/chats/g1/messages/{declared['message']['id']}"
        status, edited = await call("PATCH", at, json=edit)
        assert status == 200 and edited["message"]["forwarded"] is True, edited
        before = [(m.text, m.forwarded) for m in await bot.stored("g1")]
        for bad in ("true", 1, None):
            status, refused = await post(chat_id="g1", user="carol", text="转发", forwarded=bad)
            assert status == 400 and "forwarded must be true or false" in refused["error"], refused
        after_refusals = [(m.text, m.forwarded) for m in await bot.stored("g1")]
        forwarded_seen = [m["forwarded"] for m in await bot.playground.transcript("g1")]
        status, own = await post(chat_id="g1", user="alice", text="@群忆 /recall 爬山")
        assert status == 200 and own["message"]["forwarded"] is False
        transcript = [(m["sender"], m["is_bot"]) for m in await bot.playground.transcript("g1")]
        g1 = await bot.app.memory.chat("playground", "g1")
        assert g1 is not None and bot.app.persons is not None
        who = await bot.app.persons.who(g1.id, "老王")
    assert before == [
        ("周六去九溪爬山", False),
        ("@群忆 /recall 爬山", True),
        ("以后叫我老王吧 @群忆", True),
    ]
    assert after_refusals == before, "a refused post is not stored"
    assert forwarded_seen == [False, True, True], "the forward's /recall was not answered"
    assert transcript[-2:] == [("alice", False), ("群忆", True)], "the member's own /recall is"
    assert who.records == [], "a name declared in a forward is not the forwarding member's"


@pytest.mark.parametrize("answered_in_time", [False, True], ids=["grace-over", "answered-in-grace"])
async def test_a_post_being_answered_at_stop_gets_its_answer_or_a_503_and_stays_recorded(
    tmp_path: Path, fake_llm: FakeOpenAI, answered_in_time: bool
) -> None:
    """The model holds the answer while the bot stops: the post is answered with the reply if the
    model gives it within the stop's grace, else with a 503 saying the message was recorded (never a
    dropped connection); a post made while the stop waits for the answer gets a 503 and is not
    delivered."""
    llm = LLMSettings(enabled=True, base_url=fake_llm.base_url, model="fake-chat", max_retries=0)
    held = Hold(Answer("周五晚上九点开炉"))
    fake_llm.script(held)
    async with running_bot(tmp_path / "data", llm=llm) as bot:
        playground = bot.playground
        # two connections kept alive: the first post takes one, the post made while stopping the other
        await asyncio.gather(playground.call("GET", "/api/chats"), playground.call("GET", "/api/chats"))
        posting = asyncio.create_task(
            playground.post(chat_id="g1", user="alice", text="@群忆 周五几点开炉？")
        )
        try:
            await asyncio.wait_for(held.reached.wait(), WAIT)
            if answered_in_time:
                stopping = asyncio.create_task(playground.adapter.stop(within=WAIT))
                await stop_waits(stopping, playground.adapter._in_flight.draining)
                late_status, late = await asyncio.wait_for(
                    playground.post(chat_id="g1", user="bob", text="还有人吗"), WAIT
                )
                assert late_status == 503 and late["error"] == NOT_DELIVERED, late
                held.release.set()
            else:
                stopping = asyncio.create_task(playground.adapter.stop(within=0))  # no grace left
            status, body = await asyncio.wait_for(posting, WAIT)
            await asyncio.wait_for(stopping, WAIT)
        finally:
            held.release.set()
        stored = [(m.platform_message_id, m.text) for m in await bot.stored("g1")]
    assert body["message"]["text"] == "@群忆 周五几点开炉？"
    asked = (body["message"]["id"], "@群忆 周五几点开炉？")
    if answered_in_time:
        assert status == 200, body
        assert stored[0] == asked and [text for _id, text in stored[1:]] == ["周五晚上九点开炉"]
    else:
        assert status == 503 and body["error"] == NOT_ANSWERED, body
        assert "stopping" in body["error"] and "recorded" in body["error"]
        assert stored == [asked], "the message is recorded, the answer cut short is not"
