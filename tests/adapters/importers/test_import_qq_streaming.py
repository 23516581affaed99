"""QQ dumps and text exports are read as a stream, as Telegram and Discord exports are: the same items as
a whole read, in memory that does not grow with the file."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.importers import ImportIssue, iter_import, qq_export
from memory.types import ChatMessage

BOT = "10001"
WORDS = "周六晚上八点打本，北门集合，记得带上耳机和充电宝。" * 30  # a long message: the file grows fast


def event(i: int) -> dict[str, Any]:
    """The i-th OneBot event of a generated dump: messages (some replying, some to the bot), a notice."""
    if i % 50 == 49:
        return {
            "post_type": "notice",
            "notice_type": "group_decrease",
            "sub_type": "leave",
            "group_id": 123456,
            "user_id": 20000 + i % 7,
            "operator_id": 20000 + i % 7,
            "time": 1772366460 + i,
        }
    message: list[dict[str, Any]] = [{"type": "text", "data": {"text": f"第{i}条 {WORDS}"}}]
    if i % 10 == 3:
        message.insert(0, {"type": "reply", "data": {"id": str(i - 1)}})
    if i % 10 == 4:
        message.insert(0, {"type": "at", "data": {"qq": BOT}})
    return {
        "post_type": "message",
        "message_type": "group",
        "group_id": 123456,
        "user_id": 20000 + i % 7,
        "message_id": i,
        "time": 1772366460 + i,
        "sender": {"nickname": f"成员{i % 7}", "card": ""},
        "message": message,
    }


def napcat_dump(path: Path, count: int) -> Path:
    response = {"status": "ok", "retcode": 0, "data": {"messages": [event(i) for i in range(count)]}}
    path.write_text(json.dumps(response, ensure_ascii=False), encoding="utf-8")
    return path


def event_list(path: Path, count: int) -> Path:
    path.write_text(json.dumps([event(i) for i in range(count)], ensure_ascii=False), encoding="utf-8")
    return path


def text_export(path: Path, count: int, encoding: str = "utf-8") -> Path:
    lines = [
        "消息记录（此消息记录为文本格式，不支持重新导入）",
        "",
        "=" * 64,
        "消息分组:我的群聊",
        "=" * 64,
        "消息对象:周末开黑群",
        "=" * 64,
        "",
    ]
    for i in range(count):
        second = i // 3  # three messages a second, some the same: their ids count them
        lines.append(
            f"2017-02-25 {10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d} 小红(20002)"
        )
        lines.extend(["重复了" if i % 9 == 0 else f"第{i}条 {WORDS}", "我带[图片]", ""])
    path.write_bytes("\r\n".join(lines).encode(encoding))
    return path


def whole_read(path: Path, **options: Any) -> list[Any]:
    """What the importer gave when it read the file whole: the JSON loaded at once, or its text split."""
    raw = path.read_bytes()
    text = raw.decode("utf-16") if raw.startswith(b"\xff\xfe") else raw.decode("utf-8-sig")
    if text.lstrip()[:1] in "[{":
        root = json.loads(text)
        entries = root["data"]["messages"] if isinstance(root, dict) else root
        found = qq_export._json_messages(path, entries, len(entries), None, options.get("self_id"), None)
        return list(found)
    lines = text.splitlines()
    return list(
        qq_export._iter_txt(path, lines, len(lines), options.get("chat_id"), None, qq_export.CHINA, None)
    )


@pytest.mark.parametrize(
    ("name", "write", "options"),
    [
        ("history.json", napcat_dump, {"self_id": BOT}),
        ("events.json", event_list, {"self_id": BOT}),
        ("export.txt", text_export, {"chat_id": "123456"}),
    ],
)
def test_a_qq_file_streams_the_items_a_whole_read_gave(
    name: str, write: Callable[[Path, int], Path], options: dict[str, Any], tmp_path: Path
) -> None:
    path = write(tmp_path / name, 600)
    progress: list[tuple[int, int]] = []
    items = list(
        iter_import("qq", path, progress=lambda done, total: progress.append((done, total)), **options)
    )
    assert items == whole_read(path, **options)
    messages = [item for item in items if isinstance(item, ChatMessage)]
    assert len(messages) > 500 and len({m.message_id for m in messages}) == len(messages)
    assert progress[-1][0] == progress[-1][1] == progress[0][1]  # the total is known from the start


def test_a_qq_text_export_with_crs_and_other_line_breaks_splits_as_before(tmp_path: Path) -> None:
    """Lines end where `str.splitlines` ends them, a line at a time: \\r, \\r\\n, \\n, and \\x0b or \\u2028
    inside a message's text."""
    path = text_export(tmp_path / "export.txt", 3)
    path.write_bytes(
        path.read_bytes().replace(b"\r\n", b"\r", 5).replace("我带".encode(), "我\u2028带\x0b".encode())
    )
    assert list(iter_import("qq", path, chat_id="123456")) == whole_read(path, chat_id="123456")


@pytest.mark.parametrize(
    ("name", "write"),
    [("history.json", napcat_dump), ("events.json", event_list), ("export.txt", text_export)],
)
def test_a_large_qq_file_is_imported_in_memory_well_under_its_size(
    name: str, write: Callable[[Path, int], Path], tmp_path: Path
) -> None:
    """Found by QA pass 17 (security): the QQ importer read the whole file into memory (its bytes, its
    text, then every event parsed), where the Telegram and Discord ones stream: a dump of a few
    gigabytes could take the machine's memory. Now JSON is streamed with ijson and text line by line."""
    path = write(tmp_path / name, 4000)
    size = path.stat().st_size
    assert size > 4 * 2**20
    counted = {"messages": 0, "issues": 0}
    tracemalloc.start()
    try:
        for item in iter_import("qq", path, self_id=BOT):
            counted["issues" if isinstance(item, ImportIssue) else "messages"] += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert counted["messages"] > 3000
    assert peak < size // 4, f"peak {peak / 2**20:.1f} MB for a file of {size / 2**20:.1f} MB"
