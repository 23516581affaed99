"""`qunyi import` stores exactly what recording the export's messages one at a time on the live path
stores: the batch path's held writes and its deferred full-text rows change nothing in the database."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from adapters.importers import iter_import
from bot import importing
from bot.app import build_app
from bot.cli.main import cli
from bot.cli.options import open_config
from memory.models import Message
from memory.types import ChatMessage
from tests.tables import all_tables

PEOPLE = [
    ("user101", "小红"),
    ("user102", "阿明"),
    ("user103", "Alice"),
    ("user104", "老王"),
    ("user105", "Bob"),
]
WORDS = [
    "周六晚上八点打本？",
    "可以，我带饮料",
    "the server is down again",
    "叫我老赵就行",
    "call me Bobby from now on",
    "我喜欢吃火锅",
    "I usually go running before work",
    "哈哈哈",
    "以后就叫你小A吧",
    "deploy went fine, thanks",
]


def telegram_export(count: int, seed: int) -> dict[str, Any]:
    """A Telegram Desktop export of `count` entries: Chinese and English text, replies, @-mentions,
    forwards, photos and stickers (placeholders, some with a caption), names declared, preferences
    stated, a nickname changed halfway and a few service entries."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = []
    for n in range(1, count + 1):
        user, name = rng.choice(PEOPLE)
        if user == "user104" and n > count // 2:
            name = "王老板"
        entry: dict[str, Any] = {
            "id": n,
            "type": "message",
            "date_unixtime": str(1_700_000_000 + n * 97),
            "from": name,
            "from_id": user,
        }
        roll = rng.random()
        text: Any = rng.choice(WORDS)
        if roll < 0.05:
            messages.append({**entry, "type": "service", "action": "pin_message", "text": ""})
            continue
        if roll < 0.2:
            entry["photo"] = "(File not included. Change data exporting settings to download.)"
            text = "" if rng.random() < 0.5 else text
        elif roll < 0.25:
            entry.update(file="(File not included.)", media_type="sticker", sticker_emoji="😂")
            text = ""
        elif roll < 0.35:
            mentioned, mentioned_name = rng.choice(PEOPLE)
            text = [
                {"type": "mention_name", "text": mentioned_name, "user_id": int(mentioned[4:])},
                f" {text}",
            ]
        if rng.random() < 0.1:
            entry["forwarded_from"] = "转发来源" if rng.random() < 0.5 else None
        elif n > 1 and rng.random() < 0.2:
            entry["reply_to_message_id"] = rng.randint(max(1, n - 20), n - 1)
        messages.append({**entry, "text": text})
    return {"name": "周末开黑群", "type": "private_supergroup", "id": 1987654321, "messages": messages}


async def _record_one_by_one(export: Path, data: Path) -> None:
    """Every message of the export through `MemoryService.record`, as the live adapters record."""
    config = open_config(None)  # the settings `qunyi import` reads
    app = await build_app(config, data, watch_config=False)
    try:
        for item in iter_import("telegram", export, bot_id=config.current.bot.self_id):
            if isinstance(item, ChatMessage):
                await app.memory.record(item)
    finally:
        await app.close()


async def _tables(data: Path) -> dict[str, list[tuple[Any, ...]]]:
    app = await build_app(open_config(None), data, watch_config=False, create=False)
    try:
        return await all_tables(app.memory.db)
    finally:
        await app.close()


def test_an_import_stores_what_recording_its_messages_one_by_one_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = tmp_path / "result.json"
    export.write_text(json.dumps(telegram_export(400, seed=3), ensure_ascii=False), encoding="utf-8")
    monkeypatch.setattr(importing, "BATCH", 64)  # several batches, each with its own held writes
    args = ["import", "telegram", str(export), "--no-progress", "--catch-up-rounds", "0"]
    result = CliRunner().invoke(cli, [*args, "--data-dir", str(tmp_path / "batched")])
    assert result.exit_code == 0, result.output
    asyncio.run(_record_one_by_one(export, tmp_path / "single"))

    batched, single = asyncio.run(_tables(tmp_path / "batched")), asyncio.run(_tables(tmp_path / "single"))
    assert batched.keys() == single.keys()
    for name, rows in single.items():
        assert batched[name] == rows, name
    imported = int(result.output.split(" messages imported")[0].split()[-1])
    assert len(batched["messages"]) == imported > 300
    assert len(batched["messages_fts"]) == imported, "every message is searchable"
    assert {"老赵", "王老板"} <= {row[3] for row in batched["person_aliases"]}, "names were learnt"
    assert batched["preference_docs"] and batched["chat_members"], "the observers ran"
    forwarded = {
        str(m["id"])
        for m in json.loads(export.read_text(encoding="utf-8"))["messages"]
        if "forwarded_from" in m
    }
    # (platform message id, forwarded): columns of messages in the order the migrations made them
    columns = list(Message.__table__.columns.keys())
    at_id, at_forwarded = columns.index("platform_message_id"), columns.index("forwarded")
    assert {row[at_id] for row in batched["messages"] if row[at_forwarded]} == forwarded != set(), (
        "forwards are stored as such"
    )
