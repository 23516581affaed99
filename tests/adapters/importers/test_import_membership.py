"""Members leaving and joining in chat exports: Telegram Desktop's service entries and the
`group_decrease` / `group_increase` notices of a OneBot event dump become membership changes, which
`qunyi import` applies after the messages before them."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from adapters.importers import ImportIssue, IssueKind, iter_import
from bot.cli.main import cli
from memory.types import ChatMessage, MembershipChange

T = 1772366400
GROUP = "-1001987654321"


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def said(n: int, name: str, user: int) -> dict[str, Any]:
    return {"id": n, "type": "message", "date_unixtime": str(T + n), "from": name, "from_id": f"user{user}"}


def service(n: int, action: str, actor: str, actor_id: int, **extra: Any) -> dict[str, Any]:
    entry = {"id": n, "type": "service", "date_unixtime": str(T + n), "actor": actor, "action": action}
    return entry | {"actor_id": f"user{actor_id}", "text": "", "text_entities": []} | extra


def export(tmp_path: Path, *entries: dict[str, Any]) -> Path:
    chat = {"name": "周末开黑群", "type": "private_supergroup", "id": 1987654321, "messages": list(entries)}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(chat, ensure_ascii=False), encoding="utf-8")
    return path


ENTRIES = [
    said(1, "Alice", 111) | {"text": "周六打本"},
    said(2, "Bob", 222) | {"text": "可以"},
    said(3, "Carol", 333) | {"text": "我也来"},
    said(4, "群忆", 999) | {"text": "记下了"},
    service(5, "remove_members", "Bob", 222, members=["Bob"]),  # Bob left on his own
    service(6, "remove_members", "Alice", 111, members=["Carol"]),  # Carol removed by Alice
    service(7, "remove_members", "Alice", 111, members=["Stranger", "群忆"]),  # unknown; the bot
    service(8, "invite_members", "Alice", 111, members=["Carol"]),
    service(9, "join_group_by_link", "Bob", 222, inviter="周末开黑群"),
    service(10, "remove_members", "Alice", 111, members=["Carol"]),
    service(11, "remove_members", "Alice", 111, members=["Alice"]),
    said(12, "Alice", 111) | {"text": "我又回来了"},  # back: her leave came before this message
]


def test_telegram_service_entries_of_members_leaving_and_joining_are_changes(tmp_path: Path) -> None:
    """They were all skipped as "service message": an import told memory nothing of who had left."""
    items = list(iter_import("telegram", export(tmp_path, *ENTRIES), bot_id="999"))
    changes = [i for i in items if isinstance(i, MembershipChange)]
    assert [(c.user_id, c.joined, c.time) for c in changes] == [
        ("222", False, at(T + 5)),
        ("333", False, at(T + 6)),
        ("333", True, at(T + 8)),
        ("222", True, at(T + 9)),
        ("333", False, at(T + 10)),
        ("111", False, at(T + 11)),
    ]
    assert {c.chat_ids for c in changes} == {(GROUP,)}
    [skipped] = [i for i in items if isinstance(i, ImportIssue)]
    assert skipped.kind is IssueKind.SKIPPED and "remove_members" in skipped.reason, "nobody known by those"
    assert len([i for i in items if isinstance(i, ChatMessage)]) == 5


def test_a_name_two_accounts_wrote_under_is_not_taken_for_either(tmp_path: Path) -> None:
    entries = [
        said(1, "Sam", 1) | {"text": "hi"},
        said(2, "Sam", 2) | {"text": "hello"},
        service(3, "remove_members", "Alice", 111, members=["Sam"]),
    ]
    items = list(iter_import("telegram", export(tmp_path, *entries)))
    assert not [i for i in items if isinstance(i, MembershipChange)]


def test_importing_an_export_marks_the_members_who_left_as_of_its_end(tmp_path: Path) -> None:
    data = tmp_path / "d"
    args = ["import", "telegram", str(export(tmp_path, *ENTRIES)), "--no-progress", "--data-dir", str(data)]
    result = CliRunner().invoke(cli, [*args, "--catch-up-rounds", "0"], env={"QUNYI__BOT__SELF_ID": "999"})
    assert result.exit_code == 0, result.output
    assert "6 members leaving or joining read" in " ".join(result.output.split())
    with sqlite3.connect(data / "qunyi.db") as connection:
        rows = connection.execute(
            "SELECT p.platform_user_id, m.left_at FROM chat_members m JOIN persons p ON p.id = m.person_id"
        ).fetchall()
    assert dict(rows) == {"111": None, "222": None, "333": T + 10, "999": None}, (
        "Carol removed again; Bob back by link; Alice wrote after her leave"
    )


def test_a_onebot_dump_reads_group_decrease_and_increase_notices(tmp_path: Path) -> None:
    message = {"self_id": 10001, "time": T, "message_id": 1, "message_type": "group", "group_id": 123456}
    message |= {"user_id": 20002, "sender": {"user_id": 20002, "nickname": "小红"}, "message": "周六打本"}
    notice = {"self_id": 10001, "post_type": "notice", "group_id": 123456, "operator_id": 20001}
    events = [
        message | {"post_type": "message"},
        notice | {"time": T + 60, "notice_type": "group_decrease", "sub_type": "leave", "user_id": 20002},
        notice | {"time": T + 90, "notice_type": "group_decrease", "sub_type": "kick_me", "user_id": 10001},
        notice | {"time": T + 120, "notice_type": "group_increase", "sub_type": "invite", "user_id": 20002},
        notice | {"time": T + 150, "notice_type": "group_ban", "sub_type": "ban", "user_id": 20002},
    ]
    dump = tmp_path / "events.json"
    dump.write_text(json.dumps(events, ensure_ascii=False), encoding="utf-8")
    items = list(iter_import("qq", dump, self_id="10001"))
    assert items[1:4:2] == [
        MembershipChange("qq", ("123456",), "20002", at(T + 60)),
        MembershipChange("qq", ("123456",), "20002", at(T + 120), joined=True),
    ]
    assert [(i.kind, i.reason) for i in items if isinstance(i, ImportIssue)] == [
        (IssueKind.SKIPPED, "the bot's own account leaving or joining"),
        (IssueKind.SKIPPED, "notice event, not a message"),
    ]
