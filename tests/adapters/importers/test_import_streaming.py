"""Telegram and Discord exports are read as a stream: the same messages as a whole-file json.load gave,
in bounded memory, with a broken file a clear error that imports nothing."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from adapters.importers import ImportFileError, ImportIssue, discord_exporter, iter_import, json_stream
from adapters.importers import telegram_export as telegram
from adapters.importers.json_stream import EntryReader, MessageArray, read_outline
from memory.types import ChatKind, ChatMessage

BOT = "999"
DISCORD_BOT = "800000000000000009"


def telegram_entry(i: int) -> Any:
    """The i-th entry of a generated Telegram export: every kind the importer treats differently."""
    entry: dict[str, Any] = {
        "id": i,
        "type": "message",
        "date": "2026-03-01T20:00:00",
        "date_unixtime": str(1772366400 + i),
        "from": f"成员{i % 7}",
        "from_id": "user999" if i % 13 == 0 else f"user{100 + i % 7}",
        "text": f"第 {i} 条",
        "text_entities": [{"type": "plain", "text": f"第 {i} 条"}],
    }
    match i % 10:
        case 0:
            return {
                "id": i,
                "type": "service",
                "date_unixtime": entry["date_unixtime"],
                "action": "pin_message",
            }
        case 1:
            entry["text"] = [
                "问 ",
                {"type": "mention", "text": "@qunyi_bot"},
                {"type": "bold", "text": " 好"},
            ]
            entry["reply_to_message_id"] = i - 1
        case 2:
            entry["text"] = [{"type": "mention_name", "text": "Qunyi", "user_id": int(BOT)}, " 来"]
            entry["reply_to_message_id"] = i - 2
        case 3:
            entry.update(photo=f"photos/{i}.jpg", width=1280, height=960)
        case 4:
            entry.update(file="(File not included. Change data exporting settings to download.)")
            entry.update(media_type="sticker", sticker_emoji="👍", text="", text_entities=[])
        case 5:
            entry.update(edited="2026-03-01T20:09:00", edited_unixtime=str(1772366940 + i))
            entry["reply_to_message_id"] = i - i % 13  # often the bot's message
        case 6:
            entry.update(file=f"files/{i}.pdf", file_name="计划.pdf", mime_type="application/pdf")
        case 7:
            entry["poll"] = {"question": "周六？", "closed": False, "total_voters": 3, "answers": []}
        case 8:
            del entry["from_id"]  # malformed
        case 9:
            entry.update(text="", text_entities=[])  # empty: skipped
    return entry


def discord_entry(i: int) -> dict[str, Any]:
    """The i-th entry of a generated DiscordChatExporter export."""
    author = DISCORD_BOT if i % 7 == 0 else str(800000000000000000 + i % 5)
    entry: dict[str, Any] = {
        "id": str(900000000000000000 + i),
        "type": "Default",
        "timestamp": f"2026-03-01T12:{i // 60 % 60:02d}:{i % 60:02d}.1234567+00:00",
        "timestampEdited": None,
        "isPinned": False,
        "content": f"消息 {i}",
        "author": {"id": author, "name": f"user{i % 5}", "nickname": f"昵称{i % 3}", "isBot": False},
        "attachments": [],
        "embeds": [],
        "stickers": [],
        "reactions": [],
        "mentions": [],
    }
    match i % 6:
        case 0:
            entry["type"] = "GuildMemberJoin"
        case 1:
            entry.update(type="Reply", reference={"messageId": str(900000000000000000 + i - 2)})
        case 2:
            entry["attachments"] = [
                {"id": "1", "url": f"https://cdn/{i}.png", "fileName": "a.png", "fileSizeBytes": 10}
            ]
        case 3:
            entry.update(content="", stickers=[{"id": "5", "name": "thumbs up"}])
        case 4:
            entry["mentions"] = [{"id": DISCORD_BOT, "name": "qunyi"}]
        case 5:
            entry.update(content="", embeds=[{"title": "link"}])
    return entry


def write(path: Path, doc: dict[str, Any], *, bom: bool = False) -> Path:
    """`doc` as an export file, its `messages` last and one a line (a test can cut the file between them)."""
    head = json.dumps({key: value for key, value in doc.items() if key != "messages"}, ensure_ascii=False)
    lines = ",\n".join(json.dumps(entry, ensure_ascii=False) for entry in doc["messages"])
    text = head[:-1] + (", " if len(head) > 2 else "") + '"messages": [\n' + lines + "\n]}"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def telegram_chat(count: int) -> dict[str, Any]:
    entries = [telegram_entry(i) for i in range(1, count + 1)]
    return {"name": "周末开黑群", "type": "private_supergroup", "id": 1987654321, "messages": entries}


def discord_channel(count: int) -> dict[str, Any]:
    return {
        "guild": {"id": "900000000000000001", "name": "Qunyi Lab"},
        "channel": {"id": "900000000000000010", "type": "GuildTextChat", "name": "general"},
        "messages": [discord_entry(i) for i in range(count)],
        "messageCount": count,
    }


def reference(fmt: str, path: Path) -> list[Any]:
    """What the importers gave when they read the whole file with json.load (one chat)."""
    root = json.loads(path.read_text(encoding="utf-8-sig"))
    if fmt == "telegram":
        chat_id, kind = telegram._chat_id(root)
        name, bot = root["name"], BOT
    else:
        channel = root["channel"]
        chat_id, kind, name, bot = channel["id"], ChatKind.GROUP, channel["name"], DISCORD_BOT
    senders: dict[str, str] = {}
    items: list[Any] = []
    for index, entry in enumerate(root["messages"]):
        try:
            if fmt == "telegram":
                item = telegram._convert(entry, chat_id, kind, name, UTC, bot, senders)
            else:
                item = discord_exporter._convert(entry, chat_id, kind, name, bot, senders)
        except ValueError as exc:
            items.append((f"messages[{index}]", str(exc)))
            continue
        if isinstance(item, str):
            items.append((f"messages[{index}]", item))
        else:
            senders[item.message_id] = item.sender_id
            items.append(item)
    return items


def streamed(fmt: str, path: Path, progress: list[tuple[int, int]] | None = None) -> list[Any]:
    """The importer's items, issues as (location without the id, reason)."""
    options: dict[str, Any] = {"bot_id": DISCORD_BOT if fmt == "discord" else BOT}
    if progress is not None:
        options["progress"] = lambda done, total: progress.append((done, total))
    return [
        (item.location.split(" ")[0], item.reason) if isinstance(item, ImportIssue) else item
        for item in iter_import(fmt, path, **options)
    ]


@pytest.mark.parametrize(("fmt", "export"), [("telegram", telegram_chat), ("discord", discord_channel)])
def test_a_large_export_streams_the_messages_a_whole_read_gave(fmt: str, export: Any, tmp_path: Path) -> None:
    path = write(tmp_path / "export.json", export(3000))  # about 1 MB: many of the parser's reads
    progress: list[tuple[int, int]] = []
    items = streamed(fmt, path, progress)
    assert items == reference(fmt, path)
    assert sum(isinstance(item, ChatMessage) for item in items) > 1500
    assert any(isinstance(item, ChatMessage) and item.to_bot and item.reply_to for item in items)
    assert progress[0] == (1, 3000) and progress[-1] == (3000, 3000)  # the total is known from the start


def test_the_first_message_arrives_before_the_file_is_read_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first pass reads the file through to check it; the second hands out messages as it reads."""
    path = write(tmp_path / "result.json", telegram_chat(20_000))
    opened: list[BinaryIO] = []
    real_open = json_stream.open_export

    def recording_open(where: Path) -> BinaryIO:
        opened.append(real_open(where))
        return opened[-1]

    monkeypatch.setattr(json_stream, "open_export", recording_open)
    items = iter_import("telegram", path)
    first = next(item for item in items if isinstance(item, ChatMessage))
    assert first.message_id == "1"
    outline_pass, message_pass = opened
    assert outline_pass.closed
    assert 0 < message_pass.tell() < path.stat().st_size // 4
    items.close()
    assert message_pass.closed


def test_chat_details_after_the_messages_are_still_found(tmp_path: Path) -> None:
    chat = telegram_chat(30)
    late = {"messages": chat["messages"], "name": chat["name"], "type": chat["type"], "id": chat["id"]}
    first = streamed("telegram", write(tmp_path / "first.json", chat))
    (tmp_path / "late.json").write_text(json.dumps(late, ensure_ascii=False), encoding="utf-8")
    assert streamed("telegram", tmp_path / "late.json") == first

    channel = discord_channel(30)
    later = {"messages": channel["messages"], "channel": channel["channel"], "guild": channel["guild"]}
    (tmp_path / "later.json").write_text(json.dumps(later, ensure_ascii=False), encoding="utf-8")
    assert streamed("discord", tmp_path / "later.json") == reference("discord", tmp_path / "later.json")


def test_a_full_export_reads_each_chat_with_its_details_whatever_the_order_in_the_file(
    tmp_path: Path,
) -> None:
    """Details after their messages, `left_chats` before `chats`: chats first, then left ones, as ever."""
    group = telegram_chat(25)
    private = {
        "messages": [telegram_entry(i) for i in (2, 3)],
        "name": "Bob",
        "type": "personal_chat",
        "id": 222,
    }
    left = {"name": "旧群", "type": "private_group", "id": 55, "messages": [telegram_entry(12)]}
    export = {"left_chats": {"list": [left]}, "about": "…", "chats": {"about": "…", "list": [private, group]}}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    items = streamed("telegram", path)
    chats = list(dict.fromkeys(i.chat_id for i in items if isinstance(i, ChatMessage)))
    assert chats == ["222", "-1001987654321", "-55"]
    by_chat = {(i.chat_id, i.message_id): i for i in items if isinstance(i, ChatMessage)}
    assert by_chat["222", "2"].chat_name == "Bob" and by_chat["-55", "12"].chat_name == "旧群"
    in_group = [
        i
        for i in items
        if (isinstance(i, ChatMessage) and i.chat_id == "-1001987654321")
        or (isinstance(i, tuple) and i[0].startswith("chats.list[1]."))
    ]
    alone = reference("telegram", write(tmp_path / "group.json", group))
    assert in_group == [(f"chats.list[1].{i[0]}", i[1]) if isinstance(i, tuple) else i for i in alone]


def test_a_cut_short_export_is_a_one_line_error_and_imports_nothing(tmp_path: Path) -> None:
    path = write(tmp_path / "result.json", telegram_chat(500))
    text = path.read_bytes()
    cut = text.index(json.dumps(telegram_entry(301), ensure_ascii=False).encode()) + 10  # inside entry 301
    path.write_bytes(text[:cut])
    items = iter_import("telegram", path)
    with pytest.raises(ImportFileError) as caught:
        next(items)  # nothing is handed out before the whole file is checked
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: not valid JSON")
    assert "after 300 message entries (cut short?); nothing was imported" in message


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"[1, 2, 3]", "not a "),
        (b'"just a string"', "not a "),
        (b"hello", "not valid JSON: lexical error: invalid char in json text near 'hello'"),
        # yajl's window of bytes starts inside 👩 and ends inside 十: only whole characters are shown
        (
            (
                '{"text": "周六晚上八点打本' + "👨\u200d👩\u200d👧" * 2 + '" 一二三四五六七八九十一二三"}'
            ).encode(),
            "invalid char in json text near '\U0001f467\U0001f468\\u200d\U0001f469\\u200d\U0001f467\" "
            "一二三四五六七八九十' (before byte",
        ),
        (b"", "not valid JSON: the file is empty"),
        (b'{"messages": [1, 2]} trailing', "not valid JSON: parse error: trailing garbage"),
        (b'{"messages": [' + b"[" * 5000 + b"]" * 5000 + b"]}", "not valid JSON: nested too deeply"),
        (b'{"messages": [{"text": "caf\xe9"}]}', "not UTF-8 text (before byte"),
    ],
)
@pytest.mark.parametrize("fmt", ["telegram", "discord"])
def test_a_file_that_is_not_an_export_is_a_clear_error(
    fmt: str, content: bytes, error: str, tmp_path: Path
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ImportFileError, match=re.escape(error)) as caught:
        list(iter_import(fmt, path))
    assert "\n" not in str(caught.value)


def test_a_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    plain = streamed("telegram", write(tmp_path / "plain.json", telegram_chat(20)))
    assert streamed("telegram", write(tmp_path / "bom.json", telegram_chat(20), bom=True)) == plain


@pytest.mark.parametrize("huge", [False, True], ids=["fast", "beyond-64-bits"])
def test_numbers_come_out_as_json_load_gives_them(huge: bool, tmp_path: Path) -> None:
    """ijson reads non-integers as Decimal (and its C parser integers only up to 64 bits unless it does)."""
    chat = telegram_chat(12)
    chat["messages"][2].update(date_unixtime=1772366460.75, duration_seconds=12.5, views=2**70 if huge else 7)
    chat["messages"][3]["location_information"] = {"latitude": 55.751244, "longitude": -1e-7}
    chat["messages"][5]["reply_to_message_id"] = 4.0
    chat["ratio"] = 0.5
    path = write(tmp_path / "result.json", chat)
    outline = read_outline(path, ["messages"], ["messages", "ratio"])
    assert outline.exact is huge
    assert outline.root["ratio"] == 0.5 and type(outline.root["ratio"]) is float
    array = outline.root["messages"]
    assert isinstance(array, MessageArray)
    with EntryReader(outline) as reader:
        entries = list(reader.entries(array, ""))
    whole = json.loads(path.read_text(encoding="utf-8"))["messages"]
    assert entries == whole and _types(entries) == _types(whole)
    items = streamed("telegram", path)
    assert items == reference("telegram", path)
    timed = next(i for i in items if isinstance(i, ChatMessage) and i.message_id == "3")
    assert timed.time.timestamp() == 1772366460.75
    replying = next(i for i in items if isinstance(i, ChatMessage) and i.message_id == "6")
    assert replying.reply_to is None  # 4.0 is no message id, as before


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _types(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_types(item) for item in value]
    return type(value).__name__


def test_a_very_long_message_is_read_whole(tmp_path: Path) -> None:
    chat = telegram_chat(5)
    long_text = "很长的消息。" * 150_000  # 900,000 characters (under the limit), 2.7 MB: many buffers
    chat["messages"][1].update(text=long_text, text_entities=[{"type": "plain", "text": long_text}])
    items = streamed("telegram", write(tmp_path / "result.json", chat))
    [message] = [i for i in items if isinstance(i, ChatMessage) and i.message_id == "2"]
    assert message.text == long_text
    assert items == reference("telegram", tmp_path / "result.json")


def test_a_file_cut_short_during_the_import_ends_it_with_an_issue_after_the_messages_read(
    tmp_path: Path,
) -> None:
    """Checked, then changed while the messages are read: those read are kept, the rest is reported."""
    path = write(tmp_path / "result.json", telegram_chat(3000))
    expected = reference("telegram", path)
    items = iter_import("telegram", path, bot_id=BOT)
    first = next(items)
    os.truncate(path, path.stat().st_size // 2)
    *read, last = [first, *items]
    assert isinstance(last, ImportIssue)
    assert last.location.startswith(f"messages[{len(read)}]")
    assert "not valid JSON any more" in last.reason and "not imported" in last.reason
    assert 100 < len(read) < 3000
    assert [
        (i.location.split(" ")[0], i.reason) if isinstance(i, ImportIssue) else i for i in read
    ] == expected[: len(read)]


def test_an_escaped_lone_surrogate_is_read_as_json_load_reads_it(tmp_path: Path) -> None:
    """The C parser cannot decode `"\\udc00"`: such a file is read by ijson's Python backend instead."""
    chat = telegram_chat(12)
    half = "半个\udc00字"  # the lone surrogate is dropped
    chat["messages"][1].update(text=half, text_entities=[{"type": "plain", "text": half}])
    chat["messages"][2]["id"] = "m\udc00"  # an id that cannot be stored: reported
    path = tmp_path / "result.json"
    path.write_text(json.dumps(chat), encoding="utf-8")  # ASCII, the surrogate escaped
    items = streamed("telegram", path)
    assert items == reference("telegram", path)
    assert next(i for i in items if isinstance(i, ChatMessage) and i.message_id == "2").text == "半个字"
    assert "lone surrogate" in items[2][1]


@pytest.mark.parametrize(
    ("fmt", "content", "where"),
    [
        ("telegram", b'{"id": 5, "messages": [{"id": 1}], "name": "g", "messages": [{"id": 2}]}', "messages"),
        ("discord", b'{"messages": [{"id": "1"}], "messages": null}', "messages"),
        (
            "telegram",
            b'{"chats": {"list": [{"id": 5, "messages": [], "messages": [{"id": 2}]}]}}',
            "chats.list.item.messages",
        ),
    ],
)
def test_an_export_repeating_its_messages_key_is_a_clear_error(
    fmt: str, content: bytes, where: str, tmp_path: Path
) -> None:
    """json.loads keeps the last of a repeated key: the messages of the other arrays were dropped unsaid."""
    path = tmp_path / "twice.json"
    path.write_bytes(content)
    with pytest.raises(ImportFileError) as caught:
        next(iter_import(fmt, path))
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert f"'messages' appears twice in one object (at {where})" in message
    assert message.endswith("nothing was imported")
