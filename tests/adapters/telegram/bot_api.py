"""A loopback fake of the Telegram Bot API and the updates of the Telegram tests, for the adapter's tests
and those of Qunyi inside an aiogram bot (bot.hosts.aiogram). A module of its own, not conftest, as
tests/adapters/onebot_v11/peers.py says why; the `api` fixture (tests/adapters/conftest.py) serves
it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from adapters.telegram import TelegramAdapter, TelegramConfig
from memory.types import InboundEvent

UPDATES = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures" / "telegram" / "updates.json").read_text()
)
TOKEN = "123456:TEST-token"
BOT_USER = {"id": 999, "is_bot": True, "first_name": "群忆", "username": "qunyi_bot"}


class FakeBotAPI:
    """Answers the Bot API methods the adapter uses, and those a bot's handlers delete and edit with;
    records every call."""

    def __init__(self, updates: list[dict[str, Any]]) -> None:
        self.updates = updates
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.next_message_id = 500
        self.refusals: list[dict[str, Any]] = []  # answers to the next sendMessage calls, in order

    async def handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != TOKEN:
            return web.json_response(
                {"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401
            )
        method = request.match_info["method"]
        params = {k: _decode(v) for k, v in (await request.post()).items()}
        self.calls.append((method, params))
        if method == "getMe":
            return _ok(BOT_USER)
        if method in ("deleteWebhook", "setWebhook", "close", "deleteMessage", "deleteMessages"):
            return _ok(True)
        if method == "editMessageText":
            return _ok(self._bot_message(int(params["message_id"]), params) | {"edit_date": 1772366760})
        if method == "getUpdates":
            offset = int(params.get("offset") or 0)
            pending = [u for u in self.updates if u["update_id"] >= offset]
            if not pending:
                await asyncio.sleep(0.05)
            return _ok(pending)
        if method == "sendMessage":
            if self.refusals:
                refusal = self.refusals.pop(0)
                return web.json_response({"ok": False} | refusal, status=refusal["error_code"])
            text = params.get("text", "")
            if text == "" or len(text.encode("utf-16-le")) // 2 > 4096:
                description = "Bad Request: message text is " + ("empty" if text == "" else "too long")
                return web.json_response(
                    {"ok": False, "error_code": 400, "description": description}, status=400
                )
            self.next_message_id += 1
            return _ok(self._bot_message(self.next_message_id, params))
        return web.json_response({"ok": False, "error_code": 404, "description": "Not Found"}, status=404)

    @staticmethod
    def _bot_message(message_id: int, params: dict[str, Any]) -> dict[str, Any]:
        """The bot's message `message_id`, as the call with `params` made it."""
        return {
            "message_id": message_id,
            "from": BOT_USER,
            "chat": {"id": int(params["chat_id"]), "title": "周末开黑群", "type": "supergroup"},
            "date": 1772366700,
            "text": params["text"],
        }


def _decode(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "{[":
        return json.loads(value)
    return value


def _ok(result: Any) -> web.Response:
    return web.json_response({"ok": True, "result": result})


@contextlib.asynccontextmanager
async def serve_bot_api() -> AsyncIterator[tuple[FakeBotAPI, str]]:
    """A FakeBotAPI with the fixture's updates, served on loopback, and its base address."""
    fake = FakeBotAPI(UPDATES)
    app = web.Application()
    app.router.add_post("/bot{token}/{method}", fake.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield fake, f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def fed(base: str, *updates: dict[str, Any]) -> list[InboundEvent]:
    """The events a started adapter hands on for `updates` fed to it without polling."""
    inbox: asyncio.Queue[InboundEvent] = asyncio.Queue()
    adapter = TelegramAdapter(TelegramConfig(token=TOKEN, api_base=base, polling_timeout=0))
    await adapter.start(inbox.put)
    try:
        for update in updates:
            await adapter.feed_update(update)
    finally:
        await adapter.stop()
    return [inbox.get_nowait() for _ in range(inbox.qsize())]


def update_in(chat: dict[str, Any], update_id: int, message_id: int, **fields: Any) -> dict[str, Any]:
    """An update with message `message_id` of `chat` from Alice (text, or the fields given)."""
    body = fields or {"text": f"周六爬山 {message_id}"}
    sender = {"id": 111, "is_bot": False, "first_name": "Alice"}
    return {
        "update_id": update_id,
        "message": {"message_id": message_id, "date": 1772366400 + update_id, "chat": chat, "from": sender}
        | body,
    }


GROUP = {"id": -4455, "type": "group", "title": "周末开黑群"}
SUPERGROUP = {"id": -1001987654321, "type": "supergroup", "title": "周末开黑群"}


ALICE = {"id": 111, "is_bot": False, "first_name": "Alice"}
ADMIN = {"id": 222, "is_bot": False, "first_name": "Bob"}


def chat_member_update(update_id: int, old: str, new: str, *, is_member: bool = False) -> dict[str, Any]:
    """A `chat_member` update: Alice's status in GROUP going from `old` to `new` (`is_member` for a
    `restricted` one)."""

    def status(name: str) -> dict[str, Any]:
        fields: dict[str, Any] = {"status": name, "user": ALICE}
        if name == "kicked":
            fields["until_date"] = 0
        elif name == "restricted":
            fields |= {"is_member": is_member, "until_date": 0} | RESTRICTIONS
        return fields

    return {
        "update_id": update_id,
        "chat_member": {
            "chat": GROUP,
            "from": ADMIN,
            "date": 1772366400 + update_id,
            "old_chat_member": status(old),
            "new_chat_member": status(new),
        },
    }


RESTRICTIONS = {
    f"can_{what}": False
    for what in (
        "send_messages",
        "send_audios",
        "send_documents",
        "send_photos",
        "send_videos",
        "send_video_notes",
        "send_voice_notes",
        "send_polls",
        "send_other_messages",
        "add_web_page_previews",
        "react_to_messages",
        "change_info",
        "invite_users",
        "pin_messages",
        "manage_topics",
        "edit_tag",
    )
}


@pytest.fixture
async def api() -> AsyncIterator[tuple[FakeBotAPI, str]]:
    """The fake Bot API serving the fixture's updates, and its base address (`api_base`): a fixture of
    the Telegram adapter's tests and of those of Qunyi inside an aiogram bot (each conftest imports it)."""
    async with serve_bot_api() as served:
        yield served
