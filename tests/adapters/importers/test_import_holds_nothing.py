"""An imported entry whose text holds nothing (only control or invisible characters) is passed over as
every live adapter passes it over (`adapters.neutral.holds_nothing`): reported as skipped, never stored
as an empty message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from adapters.importers import ImportIssue, IssueKind, iter_import
from bot.cli.main import cli
from memory.types import ChatMessage

NOTHING = ["\x01\x02", "\u200b", " \x07\u200b "]


def _split(fmt: str, path: Path, **options: object) -> tuple[list[str], list[tuple[str, str]]]:
    """The texts of the messages imported and the (location, kind) of the skipped entries."""
    items = list(iter_import(fmt, path, **options))
    texts = [i.text for i in items if isinstance(i, ChatMessage)]
    skipped = [(i.location, i.kind.value) for i in items if isinstance(i, ImportIssue)]
    return texts, skipped


@pytest.mark.parametrize("nothing", NOTHING)
def test_a_telegram_message_of_control_characters_only_is_skipped(nothing: str, tmp_path: Path) -> None:
    line = {"type": "message", "date_unixtime": "1772366460", "from": "Bob", "from_id": "user2"}
    messages = [line | {"id": 1, "text": "你好"}, line | {"id": 2, "text": nothing}]
    path = tmp_path / "result.json"
    export = {"name": "群", "type": "private_supergroup", "id": 55, "messages": messages}
    path.write_text(json.dumps(export), encoding="utf-8")
    assert _split("telegram", path) == (["你好"], [("messages[1] (id 2)", IssueKind.SKIPPED.value)])


def test_a_discord_message_of_control_characters_only_is_skipped(tmp_path: Path) -> None:
    author = {"id": "7", "name": "bob"}
    line = {"type": "Default", "timestamp": "2026-03-01T12:00:00+00:00", "author": author}
    messages = [line | {"id": "1", "content": "\u200b\x01"}, line | {"id": "2", "content": "在"}]
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"channel": {"id": "9", "name": "g"}, "messages": messages}), encoding="utf-8")
    assert _split("discord", path) == (["在"], [("messages[0] (id 1)", IssueKind.SKIPPED.value)])


@pytest.mark.parametrize("nothing", NOTHING)
def test_a_qq_dump_message_of_control_characters_only_is_skipped(nothing: str, tmp_path: Path) -> None:
    def event(message_id: int, text: str) -> dict[str, object]:
        return {
            "self_id": 10001,
            "user_id": 20002,
            "time": 1772366460 + message_id,
            "message_id": message_id,
            "message_type": "group",
            "group_id": 111,
            "sender": {"user_id": 20002, "nickname": "小红"},
            "message": [{"type": "text", "data": {"text": text}}],
            "post_type": "message",
        }

    path = tmp_path / "dump.json"
    path.write_text(json.dumps([event(1, nothing), event(2, "在吗")]), encoding="utf-8")
    skipped = [("messages[0] (message_id 1)", IssueKind.SKIPPED.value)]
    assert _split("qq", path) == (["在吗"], skipped)


@pytest.mark.parametrize("nothing", NOTHING)
def test_a_qq_text_message_of_control_characters_only_is_skipped(nothing: str, tmp_path: Path) -> None:
    path = tmp_path / "export.txt"
    header, second = "2017-02-25 10:40:20 小红(20002)", "2017-02-25 10:41:02 小红(20002)"
    lines = ["消息对象:周末开黑群", header, nothing, "", second, "打本"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _split("qq", path) == (["打本"], [("line 2", IssueKind.SKIPPED.value)])


def test_a_replay_line_of_control_characters_only_is_skipped(tmp_path: Path) -> None:
    base = {"chat": "g1", "sender_id": "u1", "sender_name": "a", "time": "2026-03-01T20:15:00+08:00"}
    path = tmp_path / "log.jsonl"
    records = [base | {"message_id": "m1", "text": "\x01\u200b"}, base | {"message_id": "m2", "text": "好"}]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    assert _split("replay", path) == (["好"], [("line 1", IssueKind.SKIPPED.value)])


def test_qunyi_import_counts_them_as_passed_over_not_imported(tmp_path: Path) -> None:
    line = {"type": "message", "date_unixtime": "1772366460", "from": "Bob", "from_id": "user2"}
    messages = [line | {"id": 1, "text": "你好"}, line | {"id": 2, "text": "\x01\x02"}]
    path = tmp_path / "result.json"
    export = {"name": "群", "type": "private_supergroup", "id": 55, "messages": messages}
    path.write_text(json.dumps(export), encoding="utf-8")
    args = ["import", "telegram", str(path), "--data-dir", str(tmp_path / "d"), "--no-progress"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    summary = " ".join(result.output.split())  # the console wraps long lines
    assert "1 messages imported" in summary, summary
    assert "1 non-messages (joins, pins, empty) passed over" in summary, summary
