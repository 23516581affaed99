"""discord.py Message objects, built from gateway payloads on an offline ConnectionState, to ChatMessage;
and DiscordAdapter.send_text against that state with the HTTP call stubbed."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

discord = pytest.importorskip("discord", reason="the discord extra is not installed")

from adapters.discord import DiscordAdapter, DiscordConfig  # noqa: E402
from adapters.discord.convert import message_to_chat  # noqa: E402
from memory.types import ChatKind, ChatMessage, SegmentKind  # noqa: E402
from tests.adapters.discord.world import BOT_ID, WHEN, World, member, snowflake, user  # noqa: E402
from tests.adapters.held import stop_waits  # noqa: E402
from tests.waiting import WAIT, eventually  # noqa: E402


async def test_guild_message_with_mentions_and_display_names(world: World) -> None:
    bot = user(BOT_ID, "qunyi", bot=True)
    bob = user(3, "bob", "Bob") | {"member": member(None)}
    msg = message_to_chat(
        world.message(
            content="<@800000000000000009> did <@!3> ping <@&5> in <#10>? <:pog:123>",
            mentions=[bot, bob],
            mention_roles=["5"],
        ),
        bot_id=BOT_ID,
    )
    assert msg is not None
    assert (msg.platform, msg.chat_id, msg.sender_id) == ("discord", "10", "2")
    assert msg.sender_name == "Alice" and msg.sender_card == "Raid Lead" and msg.display_name == "Raid Lead"
    assert msg.chat_name == "general" and msg.chat_kind is ChatKind.GROUP
    assert msg.text == "@qunyi did @Bob ping @raiders in #general? :pog:"
    assert msg.mentions == (str(BOT_ID), "3") and msg.to_bot
    assert msg.time == WHEN


async def test_thread_is_its_own_chat_and_attachments_are_placeholders(world: World) -> None:
    msg = message_to_chat(
        world.message(
            world.thread,
            content="plan",
            attachments=[
                {
                    "id": "50",
                    "filename": "plan.png",
                    "size": 10,
                    "url": "https://cdn/plan.png",
                    "proxy_url": "https://p/plan.png",
                    "content_type": "image/png",
                },
                {
                    "id": "51",
                    "filename": "notes.txt",
                    "size": 10,
                    "url": "https://cdn/notes.txt",
                    "proxy_url": "https://p/notes.txt",
                },
            ],
        ),
        bot_id=BOT_ID,
    )
    assert msg is not None and msg.chat_id == "11" and msg.chat_name == "raid plan"
    assert msg.text == "plan [image][file: notes.txt]"
    assert [s.kind for s in msg.segments] == [SegmentKind.TEXT, SegmentKind.IMAGE, SegmentKind.FILE]
    assert msg.segments[1].target == "https://cdn/plan.png" and not msg.to_bot


async def test_reply_to_the_bot(world: World) -> None:
    bot_message = World.payload(world.general) | {
        "id": snowflake(WHEN, 1),
        "content": "Saturday 8pm",
        "author": user(BOT_ID, "qunyi", bot=True),
    }
    del bot_message["member"]
    msg = message_to_chat(
        world.message(
            type=19,
            content="thanks",
            message_reference={"message_id": bot_message["id"], "channel_id": "10", "guild_id": "1"},
            referenced_message=bot_message,
        ),
        bot_id=BOT_ID,
    )
    assert msg is not None and msg.reply_to == bot_message["id"] and msg.to_bot
    assert msg.segments[0].kind is SegmentKind.REPLY and msg.segments[0].text == "Saturday 8pm"


async def test_bot_own_message_and_system_messages(world: World) -> None:
    own = message_to_chat(
        world.message(content="hi", author=user(BOT_ID, "qunyi", bot=True), member=member(None)),
        bot_id=BOT_ID,
    )
    assert own is not None and own.is_bot and not own.to_bot
    assert message_to_chat(world.message(type=7, content=""), bot_id=BOT_ID) is None  # member join
    assert message_to_chat(world.message(content=""), bot_id=BOT_ID) is None  # nothing to keep
    control_only = world.message(content="\x01\x02\u200b")  # stored as an empty message, it was
    assert message_to_chat(control_only, bot_id=BOT_ID) is None


async def test_embed_only_poll_and_forwarded_messages_are_kept(world: World) -> None:
    """These arrive with empty `content`; they used to be dropped as if nothing had been said."""
    embed = message_to_chat(
        world.message(content="", embeds=[{"type": "rich", "title": "Raid tonight"}]), bot_id=BOT_ID
    )
    assert embed is not None and embed.text == "[embed]"
    question = {"text": "周六还是周日？"}
    answers = [{"answer_id": 1, "poll_media": {"text": "周六"}}]
    expiry = "2026-03-02T12:00:00+00:00"
    poll_data = {"question": question, "answers": answers, "expiry": expiry, "allow_multiselect": False}
    poll = message_to_chat(world.message(content="", poll=poll_data | {"layout_type": 1}), bot_id=BOT_ID)
    assert poll is not None and poll.text == "[poll: 周六还是周日？]"
    attachment = {
        "id": "52",
        "filename": "map.png",
        "size": 1,
        "url": "https://cdn/map.png",
        "proxy_url": "p",
    }
    forward = message_to_chat(
        world.forward(content=f"<@{BOT_ID}> 周六八点集合", attachments=[attachment]), bot_id=BOT_ID
    )
    assert forward is not None and forward.text == f"@{BOT_ID} 周六八点集合 [image]"
    assert forward.reply_to is None, "a forward is no reply to a message of this chat"
    assert forward.mentions == () and not forward.to_bot, "a forwarded mention addresses no one"


async def test_a_mention_of_the_bots_own_role_addresses_the_bot(world: World) -> None:
    """Typing `@qunyi` offers the bot and its managed role side by side; either one addresses it."""
    role = {"id": "6", "name": "qunyi", "permissions": "0", "position": 2, "color": 0, "hoist": False}
    tags = {"managed": True, "mentionable": False, "tags": {"bot_id": str(BOT_ID)}}
    world.guild._add_role(discord.Role(guild=world.guild, state=world.state, data=role | tags))
    msg = message_to_chat(
        world.message(content="<@&6> 我们上次定的什么？ <@&5>", mention_roles=["6", "5"]), bot_id=BOT_ID
    )
    assert msg is not None and msg.text == "@qunyi 我们上次定的什么？ @raiders"
    assert msg.mentions == (str(BOT_ID),) and msg.to_bot


async def test_a_reply_over_2000_characters_is_cut_to_fit_instead_of_refused(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []

    async def send_message(channel_id: int, *, params: Any) -> dict[str, Any]:
        content = params.payload["content"]
        if len(content) > 2000:  # what Discord answers
            raise discord.HTTPException(
                SimpleNamespace(status=400, reason="Bad Request"), "Must be 2000 or fewer"
            )
        sent.append(content)
        bot = user(BOT_ID, "qunyi", bot=True)
        return World.payload(world.general) | {"id": snowflake(WHEN, 9), "content": content, "author": bot}

    monkeypatch.setattr(world.state.http, "send_message", send_message)
    adapter = DiscordAdapter(DiscordConfig(token="t"))
    adapter._client = SimpleNamespace(get_channel=lambda _id: world.general, user=SimpleNamespace(id=BOT_ID))  # type: ignore[assignment]
    text = "好" * 1998 + "👍🏽" + "后面的字"
    reply = await adapter.send_text("10", text)
    assert sent == [reply.text] and len(reply.text) <= 2000
    assert reply.text == "好" * 1998 + "…", "cut between whole graphemes, never inside 👍🏽"
    assert reply.is_bot


async def test_stop_lets_the_messages_being_handled_finish_before_disconnecting(world: World) -> None:
    """discord.py runs each on_message in a task of its own and `close` does not wait for them: a message
    being handled at shutdown lost its reply (the HTTP session was closed under it), or was never recorded,
    and Discord does not deliver it again."""
    import asyncio

    events: list[str] = []
    started, release = asyncio.Event(), asyncio.Event()

    async def handler(message: Any) -> None:
        started.set()
        await release.wait()
        events.append(f"handled {message.text}")

    async def close() -> None:
        events.append("closed")

    adapter = DiscordAdapter(DiscordConfig(token="t"))
    adapter._handler = handler
    adapter._client = SimpleNamespace(user=SimpleNamespace(id=BOT_ID), close=close)  # type: ignore[assignment]
    handling = asyncio.ensure_future(adapter._on_message(world.message(content="周六八点")))
    await asyncio.wait_for(started.wait(), WAIT)
    stopping = asyncio.ensure_future(adapter.stop())
    await stop_waits(stopping, adapter._in_flight.draining)
    release.set()
    await asyncio.wait_for(stopping, WAIT)
    await handling
    assert events == ["handled 周六八点", "closed"]


async def test_another_bot_is_recorded_but_never_answered(world: World, tmp_path: Path) -> None:
    """A reply to the bot is answered; when another bot did the same, each answer was a reply to the other
    bot, which answered it: two bots talked to each other for ever. Webhooks post as bots too."""
    from bot.app import build_app
    from bot.config import ConfigStore
    from bot.config.settings import Settings
    from memory.clock import ManualClock

    ours = World.payload(world.general) | {
        "id": snowflake(WHEN, 1),
        "content": "周六八点",
        "author": user(BOT_ID, "qunyi", bot=True),
    }
    reply = {"type": 19, "message_reference": {"message_id": ours["id"], "channel_id": "10"}}
    reply["referenced_message"] = ours
    replies = [
        world.message(**reply, id=snowflake(WHEN, 2), content="收到", author=user(7, "helper", bot=True)),
        world.message(
            **reply,
            id=snowflake(WHEN, 3),
            content="/recall 周六",
            webhook_id="70",
            author=user(70, "hook", bot=True),
        ),
        world.message(**reply, id=snowflake(WHEN, 4), content="好的"),
    ]
    converted = [message_to_chat(m, bot_id=BOT_ID) for m in (world.message(**ours), *replies)]
    assert all(m is not None for m in converted)
    assert [m.from_bot for m in converted if m] == [False, True, True, False]

    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", ManualClock(WHEN))

    async def send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
        raise AssertionError(f"nothing is answered here, yet {text!r} was sent")

    try:
        outcomes = [await app.pipeline.handle(m, send) for m in converted if m]
    finally:
        await app.close()
    assert all(o.recorded for o in outcomes)
    assert [o.reason for o in outcomes] == [
        "own message",
        "another bot",
        "another bot",
        "mentioned; no reply model",
    ]


async def test_edits_and_deletions_of_any_message_reach_the_handler(world: World) -> None:
    """Edits and deletions come as raw gateway events (the cached-message ones miss every message sent
    before the bot started): an edit is the new text marked edited, at the first send time; a deletion,
    single or bulk, names the message in its channel (a DM without a guild is private)."""
    import asyncio

    from discord.raw_models import RawBulkMessageDeleteEvent, RawMessageDeleteEvent, RawMessageUpdateEvent

    from memory.types import InboundEvent, MessageDeletion

    received: list[InboundEvent] = []

    async def handler(event: InboundEvent) -> None:
        received.append(event)

    adapter = DiscordAdapter(DiscordConfig(token="t"))
    adapter._handler = handler
    client = discord.Client(intents=discord.Intents.default())
    client.loop = asyncio.get_running_loop()  # set by `start`, which would log in
    adapter._listen(client)
    update = World.payload(world.general) | {
        "content": "周日八点",
        "edited_timestamp": "2026-03-01T12:05:00+00:00",
    }
    edited = discord.Message(state=world.state, channel=world.general, data=update)  # type: ignore[arg-type]
    client.dispatch("raw_message_edit", RawMessageUpdateEvent(update, edited))  # type: ignore[arg-type]
    deleted = {"id": "42", "channel_id": "10", "guild_id": "1"}
    client.dispatch("raw_message_delete", RawMessageDeleteEvent(deleted))  # type: ignore[arg-type]
    bulk = {"ids": ["44", "43"], "channel_id": "12"}
    client.dispatch("raw_bulk_message_delete", RawBulkMessageDeleteEvent(bulk))  # type: ignore[arg-type]
    await eventually(lambda: len(received) == 4, "the edit and three deletions received")
    first = received[0]
    assert isinstance(first, ChatMessage) and first.edited and first.text == "周日八点" and first.time == WHEN
    assert received[1:] == [
        MessageDeletion("discord", "10", "42", ChatKind.GROUP),
        MessageDeletion("discord", "12", "43", ChatKind.PRIVATE),
        MessageDeletion("discord", "12", "44", ChatKind.PRIVATE),
    ]


async def test_a_forwarded_embed_and_another_bots_command_answer_are_kept(world: World) -> None:
    """A forward of an embed-only message (a link preview, a bot's card) and another bot's answer to a
    slash command (type 20) or an app command (type 23) were dropped as if nothing had been said; the
    README keeps other bots' messages and embed-only ones (found by the QA pass)."""
    forward = message_to_chat(
        world.forward(embeds=[{"type": "rich", "title": "Raid tonight"}]), bot_id=BOT_ID
    )
    assert forward is not None and forward.text == "[embed]"
    music_bot = user(7, "dj", "DJ", bot=True)
    for kind in (20, 23):
        answer = message_to_chat(
            world.message(type=kind, content="Now playing: 晴天", author=music_bot, member=member(None)),
            bot_id=BOT_ID,
        )
        assert answer is not None and answer.text == "Now playing: 晴天"
        assert answer.from_bot and not answer.to_bot and answer.sender_id == "7"


async def test_a_forwarded_command_is_recorded_as_a_message_and_never_run(
    world: World, tmp_path: Path
) -> None:
    """A forward of a plain `/recall 周六` was run as the member's command: the bot answered words somebody
    else wrote elsewhere, and kept them out of the searchable memory."""
    from bot.app import build_app
    from bot.config import ConfigStore
    from bot.config.settings import Settings
    from memory.clock import ManualClock
    from memory.types import InboundEvent

    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", ManualClock(WHEN))
    sent: list[str] = []

    async def send(_chat: str, text: str, **_kwargs: Any) -> ChatMessage:
        sent.append(text)
        return ChatMessage.outgoing("discord", "10", str(len(sent) + 900), str(BOT_ID), "qunyi", text, WHEN)

    outcomes = []

    async def handler(event: InboundEvent) -> None:
        assert isinstance(event, ChatMessage)
        outcomes.append(await app.pipeline.handle(event, send))

    adapter = DiscordAdapter(DiscordConfig(token="t"))
    adapter._handler = handler
    adapter._client = SimpleNamespace(user=SimpleNamespace(id=BOT_ID))  # type: ignore[assignment]
    forward = world.forward(content="/recall 周六")
    own = world.message(id=snowflake(WHEN, 1), content="/recall 周六")
    try:
        await adapter._on_message(forward)
        answered_the_forward = list(sent)
        await adapter._on_message(own)
        chat = await app.memory.chat("discord", "10")
        assert chat is not None
        found = [h.message for h in await app.memory.search([chat.id], "周六")]
    finally:
        await app.close()
    assert all(o.recorded for o in outcomes) and len(outcomes) == 2
    assert answered_the_forward == [], "the forward ran no command"
    assert len(sent) == 1, "the member's own command is run"
    assert [(m.platform_message_id, m.text) for m in found if m] == [(str(forward.id), "/recall 周六")], (
        "the forward is a searchable message"
    )


async def test_members_leaving_banned_and_joining_a_server_are_marked_in_its_channels(
    world: World, tmp_path: Path
) -> None:
    """A member who left a server, was kicked or banned stayed a member of its channels in memory for
    ever; the change now names every channel and thread of the server, as the server's members are
    theirs, and the bot's own account is left out."""
    import asyncio

    from discord.raw_models import RawMemberRemoveEvent

    from bot.app import build_app
    from bot.config import ConfigStore
    from bot.config.settings import Settings
    from bot.inbound import inbound_handler
    from memory.clock import ManualClock
    from memory.models import ChatMember
    from memory.persons.store import person_ids_for
    from memory.types import InboundEvent, MembershipChange

    world.guild._add_thread(world.thread)
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", ManualClock(WHEN))
    clock = ManualClock(WHEN + timedelta(hours=1))  # Discord does not date a leave: the adapter's clock
    adapter = DiscordAdapter(DiscordConfig(token="t"), clock=clock)
    handle = inbound_handler(app, adapter, asyncio.Event())
    handled: list[InboundEvent] = []

    async def handler(event: InboundEvent) -> None:
        await handle(event)
        handled.append(event)

    adapter._handler = handler
    client = discord.Client(intents=adapter.intents())
    client.loop = asyncio.get_running_loop()  # set by `start`, which would log in
    client.get_guild = lambda guild_id: world.guild if guild_id == 1 else None  # type: ignore[method-assign]
    client._connection.user = SimpleNamespace(id=BOT_ID)  # type: ignore[assignment]  # logged in
    adapter._listen(client)

    async def marks() -> list[float | None]:
        found = []
        async with app.db.read() as session:
            alice = (await person_ids_for(session, "discord", ["2"]))["2"]
            for channel in ("10", "11"):
                chat = await app.memory.chat("discord", channel)
                assert chat is not None
                member = await session.get(ChatMember, (chat.id, alice))
                found.append(None if member is None else member.left_at)
        return found

    async def dispatched(event: str, *args: Any) -> InboundEvent:
        count = len(handled)
        client.dispatch(event, *args)
        await eventually(lambda: len(handled) > count, f"{event} handled")
        return handled[-1]

    alice = world.state.store_user(user(2, "alice", "Alice"))
    rejoined = WHEN + timedelta(hours=2)
    back = discord.Member(
        data=member(None) | {"user": user(2, "alice", "Alice"), "joined_at": rejoined.isoformat()},  # type: ignore[arg-type]
        guild=world.guild,
        state=world.state,
    )
    try:
        await adapter._on_message(world.message(content="周六打本"))
        await adapter._on_message(world.message(world.thread, id=snowflake(WHEN, 1), content="我带药"))
        left = await dispatched("raw_member_remove", RawMemberRemoveEvent({"guild_id": "1"}, alice))  # type: ignore[typeddict-item]
        assert left == MembershipChange("discord", ("10", "11"), "2", clock.now())
        assert await marks() == [clock.now().timestamp()] * 2
        assert await dispatched("member_join", back) == MembershipChange(
            "discord", ("10", "11"), "2", rejoined, joined=True
        )
        assert await marks() == [None, None]
        clock.set(WHEN + timedelta(hours=3))
        client.dispatch("member_ban", world.guild, SimpleNamespace(id=BOT_ID))  # the bot's own: nothing
        assert await dispatched("member_ban", world.guild, alice) == MembershipChange(
            "discord", ("10", "11"), "2", clock.now()
        )
        assert len(handled) == 5, "two messages, the leave, the join and Alice's ban"
        assert await marks() == [clock.now().timestamp()] * 2
    finally:
        await app.close()


def test_the_members_intent_is_asked_for_only_when_configured() -> None:
    assert not DiscordAdapter(DiscordConfig(token="t")).intents().members
    asked = DiscordAdapter(DiscordConfig(token="t", members_intent=True)).intents()
    assert asked.members and asked.message_content and asked.moderation, "bans with the default intents"
