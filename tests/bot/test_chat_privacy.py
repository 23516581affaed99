"""One chat's memory never reaches another chat unless the config says so: each read path that answers
in a chat (the memory commands, the reply context, the reply model's tools) shows what the secret
chat learnt when asked there, and none of it when asked in a chat that may not read it.

The secret chat teaches everything the offline paths learn: a message (lexical, quoted and
person-only recall), a stated preference, a fact, a name the member gave themselves and one two
members called them by, a meaning a member gave a term the other chat uses too, and a note. Alice and
Bob are members of both chats."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.app import App, build_app, mining_settings
from bot.config import ConfigStore
from bot.config.settings import Settings
from bot.tools import ToolContext, build_registry
from bot.tools.service_backend import ServiceMemoryTools
from memory.chat_merge import merge_chats
from memory.clock import ManualClock
from memory.persons.store import person_ids_for
from memory.types import ChatKind, ChatMessage
from tasks.jargon_mining import JargonMiningJob
from tests.conftest import T0, chat_ids, make_message

USES = ["开炉开炉", "周五开炉吗", "开炉！", "开炉+1", "开炉带上我"]
FILLER = ["我晚点到", "好的", "收到", "周五见", "七点", "冲"]
SECRET = "g2"
ASKING = "g1"
THIRD = "g3"  # the asking chat's members talk there too
# What the secret chat is told, by (sender, text); alice goes by "Wang" there (her group card).
TOLD = [
    ("alice", "我们周六去灵隐寺后山爬山"),
    ("alice", "我以前最喜欢滑雪"),
    ("alice", "我住在杭州"),
    ("alice", "叫我老赵吧"),
    ("bob", "@Wang 大伟你明天来吗"),
    ("carol", "@Wang 大伟，收到"),
    *(("bob", text) for text in USES),
    ("carol", "开炉就是去吃火锅"),
    *(("bob", text) for text in FILLER),
]
NOTE = ("灵隐寺路线", "从北高峰下山")


@dataclass(frozen=True, slots=True)
class Setup:
    """A config, and what kind of chat the secret one is under it."""

    config: dict[str, Any]
    kind: ChatKind = ChatKind.GROUP
    merge: str = ""  # "chat": a third chat merged into the asking one; "person": Alice's two accounts


async def merged(app: App, what: str) -> None:
    """A merge made before asking: nothing of the secret chat may come along."""
    if what == "chat":
        third, asking = await chat_ids(app.memory, THIRD, ASKING)
        await merge_chats(app.db, third, asking, now=T0.timestamp(), notes=app.memory.notes)
        app.memory.forget_chats((third, asking))
    elif what == "person":
        async with app.db.read() as session:
            ids = await person_ids_for(session, "test", ["alice", "alice2"])
        assert app.persons is not None
        await app.persons.admin.merge(ids["alice2"], ids["alice"])  # her rows move to her other account


SETUPS = {
    "chat scope": Setup({}),
    "global, blacklisted": Setup({"recall": {"scope": "global", "global_blacklist": [f"test:{SECRET}"]}}),
    "global, private": Setup({"recall": {"scope": "global"}}, ChatKind.PRIVATE),
    "cross-chat for alice only": Setup({"recall": {"per_person_cross_chat": ["test:alice"]}}),
    "after a chat merge": Setup({}, merge="chat"),
    "after a person merge": Setup({}, merge="person"),
}


class Asker:
    """Bob asking in one chat: a command, the reply context, a tool of the reply model."""

    def __init__(self, app: App, chat: str, kind: ChatKind) -> None:
        self.app, self.chat, self.kind = app, chat, kind
        self.n = 1000 if chat == ASKING else 2000

    async def command(self, text: str) -> str:
        self.n += 1
        sent: list[str] = []

        async def send(chat: str, answer: str, **_kwargs: Any) -> ChatMessage:
            sent.append(answer)
            return make_message(self.n + 500, chat=chat, sender="bot", text=answer, is_bot=True)

        message = make_message(self.n, chat=self.chat, sender="bob", text=text, chat_kind=self.kind)
        await self.app.pipeline.handle(message, send)
        return "\n".join(sent)

    async def context(self, text: str, mentions: tuple[str, ...] = ()) -> str:
        self.n += 1
        message = make_message(
            self.n, chat=self.chat, sender="bob", text=text, chat_kind=self.kind, mentions=list(mentions)
        )
        recorded = await self.app.memory.record(message)
        [stored] = await self.app.memory.recent(recorded.chat_id, 1)
        context = await self.app.memory.context_for_reply(recorded.chat_id, stored)
        # The recent window is this chat's own talk, the questions asked before among it.
        return "\n".join("\n".join(s.lines) for s in context.sections if s.name != "recent")

    async def tool(self, name: str, args: dict[str, Any]) -> str:
        key = f"test:{self.chat}"
        async with self.app.db.read() as session:
            bob = (await person_ids_for(session, "test", ["bob"]))["bob"]
        assert self.app.memory.notes is not None
        tools = ServiceMemoryTools(self.app.memory, asker=bob)
        ctx = ToolContext(key, self.app.memory.notes.for_chat(key), tools)
        return await build_registry(10.0).call(name, args, ctx)


ReadPath = Callable[[Asker], Awaitable[str]]
# Each read path, and the word of the secret chat's memory it shows when asked there.
PATHS: dict[str, tuple[ReadPath, str]] = {
    "/recall words": (lambda a: a.command("/recall 灵隐寺"), "后山爬山"),
    "/recall a quote": (lambda a: a.command('/recall "灵隐寺后山"'), "后山爬山"),
    "/recall a preference": (lambda a: a.command("/recall 以前喜欢的运动"), "滑雪"),
    "/recall by slang meaning": (lambda a: a.command("/recall 吃火锅"), "开炉"),
    "/who by card": (lambda a: a.command("/who Wang"), "杭州"),
    "/who by declared name": (lambda a: a.command("/who 老赵"), "杭州"),
    "/who by called name": (lambda a: a.command("/who 大伟"), "杭州"),
    "/what": (lambda a: a.command("/what 开炉"), "火锅"),
    "reply context, slang": (lambda a: a.context("周五开炉吗"), "火锅"),
    "reply context, card": (lambda a: a.context("@alice 你最近住哪", ("alice",)), "杭州"),
    "reply context, recall": (lambda a: a.context("灵隐寺后山怎么走"), "后山爬山"),
    "reply context, note hints": (lambda a: a.context("路线"), NOTE[0]),
    "recall tool": (lambda a: a.tool("recall", {"query": "灵隐寺"}), "后山爬山"),
    "person tool": (lambda a: a.tool("person", {"name": "老赵"}), "杭州"),
    "jargon tool": (lambda a: a.tool("jargon", {"term": "开炉"}), "火锅"),
    "note_get tool": (lambda a: a.tool("note_get", {"name": NOTE[0]}), NOTE[1]),
    "note_hints tool": (lambda a: a.tool("note_hints", {}), NOTE[0]),
}


@asynccontextmanager
async def taught(tmp_path: Path, setup: Setup) -> AsyncIterator[App]:
    """A bot whose secret chat was told `TOLD` (and holds `NOTE`), its jobs run; the asking chat uses
    the same slang and has both members."""
    # one member asks every path in turn, so the members' command limit is off here
    config = {
        **setup.config,
        "jargon": {"min_df": 2, "min_lift": 0.0},
        "reply": {"commands_per_member": 0},
    }
    settings = Settings.model_validate(config)
    app = await build_app(ConfigStore(settings, None), tmp_path / "data", ManualClock(T0))

    async def send(chat: str, text: str, **_kwargs: Any) -> ChatMessage:
        return make_message(999, chat=chat, sender="bot", text=text, is_bot=True)

    try:
        said = [(SECRET, sender, text, setup.kind) for sender, text in TOLD]
        asking = ("alice", "bob", "alice2")
        said += [(ASKING, sender, text, ChatKind.GROUP) for sender in asking for text in USES]
        said += [(THIRD, sender, text, ChatKind.GROUP) for sender in ("alice2", "bob") for text in FILLER]
        for n, (chat, sender, text, kind) in enumerate(said):
            card = "Wang" if sender == "alice" and chat == SECRET else ""
            mentions = ["alice"] if text.startswith("@Wang") else []
            message = make_message(
                n, chat=chat, sender=sender, text=text, sender_card=card, mentions=mentions, chat_kind=kind
            )
            await app.pipeline.handle(message, send)
        await JargonMiningJob(app.db, lambda: mining_settings(settings)).run(T0)
        assert app.persons is not None
        await app.persons.consolidator.run(T0)
        assert app.memory.notes is not None
        await app.memory.notes.for_chat(f"test:{SECRET}").write(*NOTE)
        await app.memory.notes.for_chat(f"test:{THIRD}").write("集合地点", "地铁口")
        await merged(app, setup.merge)
        yield app
    finally:
        await app.close()


@pytest.mark.parametrize("setup", SETUPS.values(), ids=SETUPS.keys())
async def test_what_a_chat_learnt_reaches_no_chat_that_may_not_read_it(tmp_path: Path, setup: Setup) -> None:
    async with taught(tmp_path, setup) as app:
        assert len(await chat_ids(app.memory, SECRET, ASKING)) == 2
        in_secret, elsewhere = Asker(app, SECRET, setup.kind), Asker(app, ASKING, ChatKind.GROUP)
        unknown: list[str] = []
        leaked: list[str] = []
        for name, (read, secret) in PATHS.items():
            if secret not in await read(in_secret):
                unknown.append(name)
            if secret in await read(elsewhere):
                leaked.append(name)
    assert unknown == [], "the secret chat itself knows what it was told"
    assert leaked == [], "read in the other chat"
