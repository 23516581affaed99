"""Qunyi as a cog of a discord.py bot (bot.hosts.discord_cog): a commands.Bot on an offline state (the guild
of tests.adapters.discord.world, its HTTP call to send stubbed) records what its gateway tells as Qunyi's
own Discord adapter would, and answers through the bot, its answers recorded once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

discord = pytest.importorskip("discord", reason="the discord extra is not installed")

from discord.ext import commands  # noqa: E402
from discord.raw_models import (  # noqa: E402
    RawBulkMessageDeleteEvent,
    RawMemberRemoveEvent,
    RawMessageDeleteEvent,
    RawMessageUpdateEvent,
)

from adapters.discord import DiscordAdapter, DiscordConfig  # noqa: E402
from bot.config import ConfigError  # noqa: E402
from bot.hosts.discord_cog import QunyiCog, attach  # noqa: E402
from bot.pid_file import PID_FILE  # noqa: E402
from memory.clock import ManualClock  # noqa: E402
from memory.models import ChatMember  # noqa: E402
from memory.persons.store import person_ids_for  # noqa: E402
from memory.types import ChatKind, ChatMessage, InboundEvent, MembershipChange, MessageDeletion  # noqa: E402
from tests.adapters.discord.world import BOT_ID, WHEN, World, member, snowflake, user  # noqa: E402
from tests.adapters.host import stored, watch_feeds  # noqa: E402
from tests.waiting import eventually  # noqa: E402

ALICE = user(2, "alice", "Alice")


class CogBot:
    """A discord.py bot with Qunyi's cog, on an offline state holding the world's guild: the gateway's
    events are dispatched to it (`dispatched`), its HTTP call to send a message is answered here (`sent`
    the payloads asked for; `refusal`, when set, raised instead; `held`, when set, holds the answer
    until it is set; with `echo_while_sending`, the gateway's
    echo of the message comes before the answer), and `fed` are the events Qunyi was fed. `plain`: a
    plain discord.Client instead, Qunyi attached to it (`attach`)."""

    def __init__(
        self, data_dir: Path, fed: list[InboundEvent], intents: Any = None, *, plain: bool = False
    ) -> None:
        if intents is None:
            intents = discord.Intents.default()
            intents.message_content = intents.members = True
        self.bot = (
            discord.Client(intents=intents) if plain else commands.Bot(command_prefix="!", intents=intents)
        )
        self.bot.loop = asyncio.get_running_loop()  # set by `start`, which would log in
        state = self.bot._connection
        state.user = discord.ClientUser(state=state, data=user(BOT_ID, "qunyi", bot=True))  # logged in
        self.world = World(state)
        self.world.guild._add_thread(self.world.thread)
        self.clock = ManualClock(WHEN + timedelta(hours=1))  # Discord does not date a leave
        if plain:  # a plain Client: Qunyi attached to it
            self.cog = attach(self.bot, data_dir=data_dir, clock=self.clock)
        else:
            self.cog = QunyiCog(self.bot, data_dir=data_dir, clock=self.clock)
        self.data_dir, self.fed = data_dir, fed
        self.sent: list[dict[str, Any]] = []
        self.refusal: Exception | None = None
        self.echo_while_sending = True
        self.held: asyncio.Event | None = None  # when given, a send is answered once it is set
        self.asked = 0  # the sends asked for, answered or not
        self.echoes: list[asyncio.Future[None]] = []
        self.bot.http.send_message = self._send_message  # type: ignore[method-assign]

    async def _send_message(self, channel_id: int, *, params: Any) -> dict[str, Any]:
        """Discord's answer to sending a message: the message as stored. The gateway tells the bot of it
        too (`on_message`), with `echo_while_sending` before the answer comes back, as it may."""
        if self.refusal is not None:
            raise self.refusal
        self.asked += 1
        if self.held is not None:
            await self.held.wait()
        self.sent.append(params.payload)
        message = self.bot_message(len(self.sent) + 900, params.payload["content"])
        if self.echo_while_sending:
            echo = discord.Message(state=self.world.state, channel=self.world.general, data=message)
            self.echoes.append(asyncio.ensure_future(self.cog.on_message(echo)))
            await asyncio.sleep(0)  # one turn of the loop, no wait: the echo's listener runs as far as it can
        return message

    def bot_message(self, n: int, content: str) -> dict[str, Any]:
        """The payload of the bot's message `n` in #general."""
        payload = World.payload(self.world.general) | {
            "id": snowflake(WHEN, n),
            "content": content,
            "author": user(BOT_ID, "qunyi", bot=True),
        }
        del payload["member"]
        return payload

    def said(self, n: int, content: str, channel: Any = None, **payload: Any) -> Any:
        """Alice's message `n` (in #general unless `channel` is given)."""
        return self.world.message(channel, id=snowflake(WHEN, n), content=content, **payload)

    async def dispatched(self, event: str, *args: Any) -> None:
        """Dispatch gateway event `event` as discord.py does (each listener in a task of its own), and
        return once its listeners are done."""
        before = asyncio.all_tasks()
        self.bot.dispatch(event, *args)
        await asyncio.gather(*(asyncio.all_tasks() - before))

    async def stop(self) -> None:
        """Remove the cog (as `bot.close()` does): Qunyi stops, its answers under way finished."""
        if self.bot.get_cog("Qunyi") is not None:
            await self.bot.remove_cog("Qunyi")
        await asyncio.gather(*self.echoes)


@pytest.fixture
async def cogbot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[CogBot]:
    """The bot with the cog added (Qunyi started); the cog removed afterwards."""
    bot = CogBot(tmp_path / "data", watch_feeds(monkeypatch))
    await bot.bot.add_cog(bot.cog)
    try:
        yield bot
    finally:
        await bot.stop()
        await bot.bot.http.close()


def a_day(bot: CogBot) -> list[tuple[str, tuple[Any, ...]]]:
    """What the gateway tells in a day, as (event, its arguments): messages
    (an @ of the bot, one in a thread, a reply to the bot, a forward, a webhook's, one another cog of
    the bot sent), an edit, deletions single and bulk, a member leaving, joining and banned."""
    world = bot.world
    ours = bot.bot_message(9, "周六八点")
    reply = {"message_reference": {"message_id": ours["id"], "channel_id": "10"}, "referenced_message": ours}
    edit = World.payload(world.general) | {
        "id": snowflake(WHEN, 1),
        "content": "<@800000000000000009> 周日去哪？",
        "edited_timestamp": "2026-03-01T12:05:00+00:00",
    }
    hook = user(70, "hook", bot=True)
    rejoined = discord.Member(
        data=member(None) | {"user": ALICE, "joined_at": (WHEN + timedelta(hours=2)).isoformat()},
        guild=world.guild,
        state=world.state,
    )
    alice = world.state.store_user(ALICE)
    bot_user = user(BOT_ID, "qunyi", bot=True)
    deleted = {"id": snowflake(WHEN, 2), "channel_id": "11", "guild_id": "1"}
    bulk = {"ids": ["44", "43"], "channel_id": "10", "guild_id": "1"}
    return [
        ("message", (bot.said(1, "<@800000000000000009> 周六去哪？", mentions=[bot_user]),)),
        ("message", (bot.said(2, "我带药", world.thread),)),
        ("message", (bot.said(3, "好的", type=19, **reply),)),
        ("message", (world.forward(content="周六八点集合"),)),
        ("message", (bot.said(5, "/recall 周六", webhook_id="70", author=hook),)),
        ("message", (discord.Message(state=world.state, channel=world.general, data=ours),)),
        ("raw_message_edit", (RawMessageUpdateEvent(edit, world.message(**edit)),)),  # type: ignore[arg-type]
        ("raw_message_delete", (RawMessageDeleteEvent(deleted),)),  # type: ignore[arg-type]
        ("raw_bulk_message_delete", (RawBulkMessageDeleteEvent(bulk),)),  # type: ignore[arg-type]
        ("raw_member_remove", (RawMemberRemoveEvent({"guild_id": "1"}, alice),)),  # type: ignore[typeddict-item]
        ("member_join", (rejoined,)),
        ("member_ban", (world.guild, alice)),
    ]


async def test_events_are_fed_as_qunyis_own_discord_adapter_reads_them(cogbot: CogBot) -> None:
    """Each event the gateway tells is fed the same, to the field, as Qunyi's Discord adapter reads it
    (the adapter listens to the same bot here)."""
    read: list[InboundEvent] = []

    async def handler(event: InboundEvent) -> None:
        read.append(event)

    adapter = DiscordAdapter(DiscordConfig(token="t"), clock=cogbot.clock)
    adapter._handler = handler
    adapter._listen(cogbot.bot)
    for event, args in a_day(cogbot):
        await cogbot.dispatched(event, *args)
    assert cogbot.fed == read
    kinds = [type(event) for event in read]
    assert kinds.count(ChatMessage) == 7 and kinds.count(MessageDeletion) == 3
    assert kinds.count(MembershipChange) == 3
    edit = read[6]
    assert isinstance(edit, ChatMessage) and edit.edited and edit.to_bot
    own = read[5]
    assert isinstance(own, ChatMessage) and own.is_bot, "what another cog sent is the bot's own"
    left = read[10]
    assert left == MembershipChange("discord", ("10", "11"), "2", cogbot.clock.now())


async def test_a_recall_is_answered_through_the_channel_as_a_reply_and_recorded_once_as_its_own(
    cogbot: CogBot,
) -> None:
    """discord.py tells the bot of every message it sends, Qunyi's answers too, and the gateway may tell
    before the send returns: the answer is recorded from what the send returned, its echo not fed."""
    await cogbot.dispatched("message", cogbot.said(1, "周六去西湖边骑车吧"))
    recall = cogbot.said(2, "/recall 西湖")
    await cogbot.dispatched("message", recall)
    await eventually(lambda: bool(cogbot.sent), "the answer sent")
    await cogbot.stop()  # Qunyi lets the answer under way finish first
    [answer] = cogbot.sent
    assert answer["message_reference"]["message_id"] == recall.id
    assert answer["allowed_mentions"]["parse"] == ["users"]
    assert "周六去西湖边骑车吧" in answer["content"]
    assert (await stored(cogbot.data_dir))[2:] == [(snowflake(WHEN, 901), answer["content"], True)]
    assert not any(isinstance(event, ChatMessage) and event.is_bot for event in cogbot.fed)


async def test_what_the_bot_sends_otherwise_is_recorded_as_its_own(cogbot: CogBot) -> None:
    """Another cog's message is told by the gateway only: recorded as the bot's. An echo of Qunyi's
    answer that comes after the send returned is not fed again."""
    cogbot.echo_while_sending = False
    answer = await cogbot.cog.send("10", "周六见", chat_kind=ChatKind.GROUP, reply_to=None)
    echo = discord.Message(
        state=cogbot.world.state, channel=cogbot.world.general, data=cogbot.bot_message(901, "周六见")
    )
    assert str(echo.id) == answer.message_id
    await cogbot.cog.on_message(echo)
    other = discord.Message(
        state=cogbot.world.state, channel=cogbot.world.general, data=cogbot.bot_message(7, "来自另一个 cog")
    )
    await cogbot.dispatched("message", other)
    assert [(e.message_id, e.is_bot) for e in cogbot.fed if isinstance(e, ChatMessage)] == [
        (str(other.id), True)
    ]


async def test_a_message_after_the_bots_own_is_recorded_after_it_while_an_answer_is_being_sent(
    cogbot: CogBot,
) -> None:
    """The bot's own message (another cog's) waits for Qunyi's sends under way to its channel, to know
    whether it is the echo of one: a member's message after it in the channel, in a listener task of
    its own, was recorded first. A channel's events are now fed in the order they came."""
    cogbot.echo_while_sending = False
    cogbot.held = asyncio.Event()
    await cogbot.dispatched("message", cogbot.said(1, "周六去西湖边骑车吧"))
    await cogbot.dispatched("message", cogbot.said(2, "/recall 西湖"))
    await eventually(lambda: cogbot.asked == 1, "the answer being sent")
    await eventually(
        lambda: any(
            isinstance(e, ChatMessage) and e.message_id == str(snowflake(WHEN, 2)) for e in cogbot.fed
        ),
        "the /recall fed",
    )
    own = discord.Message(
        state=cogbot.world.state, channel=cogbot.world.general, data=cogbot.bot_message(7, "另一个 cog 说的")
    )
    before = asyncio.all_tasks()
    cogbot.bot.dispatch("message", own)
    cogbot.bot.dispatch("message", cogbot.said(8, "好的"))
    cogbot.bot.dispatch("message", cogbot.said(9, "我带药", cogbot.world.thread))  # another channel
    listeners = asyncio.all_tasks() - before
    thread_fed = str(snowflake(WHEN, 9))
    await eventually(
        lambda: any(isinstance(e, ChatMessage) and e.message_id == thread_fed for e in cogbot.fed),
        "the thread's message fed (it waits for no channel of another)",
    )
    cogbot.held.set()
    await asyncio.gather(*listeners)
    await cogbot.stop()
    order = [message_id for message_id, _, _ in await stored(cogbot.data_dir)]
    mine, member = str(snowflake(WHEN, 7)), str(snowflake(WHEN, 8))
    assert order.index(mine) < order.index(member)


async def test_an_edit_replaces_and_a_deletion_forgets(cogbot: CogBot) -> None:
    await cogbot.dispatched("message", cogbot.said(1, "周六八点"))
    await cogbot.dispatched("message", cogbot.said(2, "我的手机号是 13800000000"))
    await cogbot.dispatched("message", cogbot.said(3, "收到"))
    edit = World.payload(cogbot.world.general) | {"id": snowflake(WHEN, 1), "content": "周日八点"}
    await cogbot.dispatched("raw_message_edit", RawMessageUpdateEvent(edit, cogbot.world.message(**edit)))  # type: ignore[arg-type]
    deleted = {"id": snowflake(WHEN, 2), "channel_id": "10", "guild_id": "1"}
    await cogbot.dispatched("raw_message_delete", RawMessageDeleteEvent(deleted))  # type: ignore[arg-type]
    bulk = {"ids": [snowflake(WHEN, 3)], "channel_id": "10", "guild_id": "1"}
    await cogbot.dispatched("raw_bulk_message_delete", RawBulkMessageDeleteEvent(bulk))  # type: ignore[arg-type]
    await cogbot.stop()
    assert await stored(cogbot.data_dir) == [(snowflake(WHEN, 1), "周日八点", False)]


async def test_a_member_leaving_is_marked_gone_in_every_channel_of_the_server(cogbot: CogBot) -> None:
    await cogbot.dispatched("message", cogbot.said(1, "周六打本"))
    await cogbot.dispatched("message", cogbot.said(2, "我带药", cogbot.world.thread))
    alice = cogbot.world.state.store_user(ALICE)
    await cogbot.dispatched("raw_member_remove", RawMemberRemoveEvent({"guild_id": "1"}, alice))  # type: ignore[typeddict-item]
    app = cogbot.cog.plugin.app
    async with app.db.read() as session:
        person = (await person_ids_for(session, "discord", ["2"]))["2"]
        left = []
        for channel in ("10", "11"):
            chat = await app.memory.chat("discord", channel)
            assert chat is not None
            found = await session.get(ChatMember, (chat.id, person))
            left.append(None if found is None else found.left_at)
    assert left == [cogbot.clock.now().timestamp()] * 2


async def test_a_failing_send_loses_nothing(cogbot: CogBot, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    cogbot.refusal = discord.Forbidden(SimpleNamespace(status=403, reason="Forbidden"), "Missing Access")
    await cogbot.dispatched("message", cogbot.said(1, "周六去西湖"))
    await cogbot.dispatched("message", cogbot.said(2, "/recall 西湖"))
    await eventually(lambda: "not sent" in caplog.text, "the failed send logged")
    assert "Missing Access" in caplog.text
    await cogbot.stop()
    assert await stored(cogbot.data_dir) == [
        (snowflake(WHEN, 1), "周六去西湖", False),
        (snowflake(WHEN, 2), "/recall 西湖", False),
    ]


async def test_adding_and_removing_the_cog_hold_and_free_the_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = CogBot(tmp_path / "data", watch_feeds(monkeypatch))
    try:
        await bot.bot.add_cog(bot.cog)
        assert (bot.data_dir / PID_FILE).exists()
        await bot.dispatched("message", bot.said(1, "周六见"))
        await bot.bot.close()  # removes the cogs, then disconnects
        assert not (bot.data_dir / PID_FILE).exists()
        assert await stored(bot.data_dir) == [(snowflake(WHEN, 1), "周六见", False)]
    finally:
        await bot.bot.http.close()


async def test_a_plain_client_records_and_answers_beside_its_own_handlers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain discord.Client takes no cogs: `attach` chains Qunyi's listeners to the client's own
    handlers (set before and after it), starts Qunyi as the client logs in (after its setup_hook) and
    stops it as the client closes, its answer under way sent first."""
    bot = CogBot(tmp_path / "data", watch_feeds(monkeypatch), plain=True)
    client = bot.bot

    async def static_login(token: str) -> dict[str, Any]:  # Discord's answer: the bot's account
        return user(BOT_ID, "qunyi", bot=True)

    async def application_info() -> Any:
        return SimpleNamespace(id=BOT_ID, interactions_endpoint_url=None, flags=discord.ApplicationFlags())

    client.http.static_login = static_login  # type: ignore[method-assign]
    client.application_info = application_info  # type: ignore[method-assign]
    seen: list[str] = []
    set_up: list[bool] = []

    @client.event
    async def on_message(message: Any) -> None:
        seen.append(message.content)

    @client.event
    async def setup_hook() -> None:
        set_up.append(True)

    try:
        await client.login("token")  # as client.start does, before it connects
        assert set_up == [True] and (bot.data_dir / PID_FILE).exists()
        await bot.dispatched("message", bot.said(1, "周六去西湖边骑车吧"))
        await bot.dispatched("message", bot.said(2, "/recall 西湖"))
        await eventually(lambda: bool(bot.sent), "the answer sent")
        await client.close()
        assert not (bot.data_dir / PID_FILE).exists()
        await asyncio.gather(*bot.echoes)
    finally:
        await client.http.close()
    assert seen == ["周六去西湖边骑车吧", "/recall 西湖"], "the client's own handler still sees every message"
    [answer] = bot.sent
    assert "周六去西湖边骑车吧" in answer["content"]
    assert await stored(bot.data_dir) == [
        (snowflake(WHEN, 1), "周六去西湖边骑车吧", False),
        (snowflake(WHEN, 2), "/recall 西湖", False),
        (snowflake(WHEN, 901), answer["content"], True),
    ]


async def test_a_broken_config_keeps_the_cog_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[reply]\nprobability = 7\n", encoding="utf-8")
    bot = CogBot(tmp_path / "data", watch_feeds(monkeypatch))
    bot.cog = QunyiCog(bot.bot, config=config, data_dir=bot.data_dir)
    try:
        with pytest.raises(ConfigError, match=r"reply\.probability"):
            await bot.bot.add_cog(bot.cog)
        assert bot.bot.get_cog("Qunyi") is None
        assert not (bot.data_dir / PID_FILE).exists()
    finally:
        await bot.bot.http.close()


async def test_intents_that_keep_events_from_qunyi_are_named_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    bot = CogBot(tmp_path / "data", watch_feeds(monkeypatch), intents=discord.Intents.default())
    try:
        await bot.bot.add_cog(bot.cog)
        await bot.stop()
    finally:
        await bot.bot.http.close()
    assert "leave out Message Content" in caplog.text
    assert "without the Server Members intent" in caplog.text


async def test_context_gives_the_bot_the_memory_for_its_own_reply_prompt(cogbot: CogBot) -> None:
    await cogbot.dispatched("message", cogbot.said(1, "我一般周末去西湖边骑车"))
    context = await cogbot.cog.context(cogbot.said(2, "alice 周末一般干嘛？"))
    assert "周末去西湖边骑车" in context.text and "<memory" in context.text
