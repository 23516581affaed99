"""`qunyi people …` against a real database filled by `qunyi import replay`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli.main import cli

RECORDS = [
    {"chat": "g1", "message_id": "m1", "sender_id": "u1", "sender_name": "Lily", "text": "周六去爬山吗"},
    {"chat": "g1", "message_id": "m2", "sender_id": "u2", "sender_name": "Bob", "text": "好啊"},
]


def _imported(tmp_path: Path) -> list[str]:
    log = tmp_path / "log.jsonl"
    lines = [json.dumps({**r, "time": "2026-03-01T20:15:00+08:00"}, ensure_ascii=False) for r in RECORDS]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = ["--data-dir", str(tmp_path / "d")]
    result = CliRunner().invoke(cli, ["import", "replay", str(log), "--no-progress", *data])
    assert result.exit_code == 0, result.output
    return data


def _shown(data: list[str]) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["people", "show", "u1", "--chat", "replay:g1", "--json", *data])
    assert result.exit_code == 0, result.output
    shown: dict[str, Any] = json.loads(result.output)
    return shown


@pytest.mark.parametrize(
    ("bad", "exit_code", "message"),
    [
        (["--set-fact", "bad"], 2, "'bad' is not KEY=VALUE"),
        (["--set-fact", "=no key"], 1, "a fact needs a key and a value"),
        (["--add-alias", "   "], 1, "has nothing a person could be called by"),
        (["--add-fact", "likes"], 2, "'likes' is not KEY=VALUE"),
        (["--add-fact", "location=上海"], 1, "location holds one value at a time: set it"),
        (["--remove-fact", "likes="], 2, "'likes=' names no value"),
        (["--remove-fact", "likes=猫"], 1, "no fact likes = 猫 to remove (they hold no fact of that key)"),
    ],
)
def test_edit_with_a_bad_option_changes_nothing(
    tmp_path: Path, bad: list[str], exit_code: int, message: str
) -> None:
    data = _imported(tmp_path)
    before = _shown(data)
    edit = ["people", "edit", "u1", "--chat", "replay:g1", "--name", "新名字", "--add-alias", "莉莉"]
    edit += ["--set-fact", "city = 杭州"]
    result = CliRunner().invoke(cli, [*edit, *bad, *data])
    assert result.exit_code == exit_code and message in result.output
    assert _shown(data) == before, "neither the name nor the good alias and fact were written"
    result = CliRunner().invoke(cli, [*edit, *data])
    assert result.exit_code == 0, result.output
    after = _shown(data)
    assert after["name"] == "新名字" and "莉莉" in {a["alias"] for a in after["aliases"]}
    assert [(f["key"], f["value"]) for f in after["facts"]] == [("city", "杭州")]


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("#99999999999999999999999", "person #99999999999999999999999 is not a member of this chat"),
        ("#²", "no one called '#²' in this chat"),  # a name: ² is no number
    ],
)
def test_a_person_number_the_database_cannot_hold_is_no_member(tmp_path: Path, key: str, says: str) -> None:
    """`#<id>` past SQLite's integers failed with an OverflowError traceback, and `#²` (a digit to
    str.isdigit, not to int) with a ValueError one (found by the QA pass)."""
    data = _imported(tmp_path)
    result = CliRunner().invoke(cli, ["people", "show", key, "--chat", "replay:g1", *data])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert says in result.output


def _replayed_with_the_bot(tmp_path: Path) -> list[str]:
    """RECORDS and an answer of the bot's own account (`[bot] self_id` "bot" in a replayed log)."""
    log = tmp_path / "log.jsonl"
    bot_said = {
        "chat": "g1",
        "message_id": "m3",
        "sender_id": "bot",
        "sender_name": "群忆",
        "text": "好呀，我记下了",
    }
    said = [*RECORDS, bot_said]
    lines = [json.dumps({**r, "time": "2026-03-01T20:15:00+08:00"}, ensure_ascii=False) for r in said]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = ["--data-dir", str(tmp_path / "d")]
    replayed = CliRunner().invoke(cli, ["replay", str(log), "--no-progress", *data])
    assert replayed.exit_code == 0, replayed.output
    return data


def _bot_still_said_it(data: list[str]) -> None:
    recent = CliRunner().invoke(cli, ["recall", "记下", "--chat", "replay:g1", "--json", *data])
    assert "好呀，我记下了" in recent.output, "nothing was forgotten"


def test_forgetting_the_bot_s_own_account_is_refused(tmp_path: Path) -> None:
    """The bot's own account could be forgotten, erasing its side of every conversation from memory."""
    data = _replayed_with_the_bot(tmp_path)
    forget = ["people", "forget", "bot", "--chat", "replay:g1", "--remove-messages", "--yes", *data]
    result = CliRunner().invoke(cli, forget)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "(account bot) is the bot's own account" in result.output
    _bot_still_said_it(data)
    member = CliRunner().invoke(cli, ["people", "forget", "u2", "--chat", "replay:g1", "--yes", *data])
    assert member.exit_code == 0 and "forgot #" in member.output


@pytest.mark.parametrize("order", [("u1", "bot"), ("bot", "u1")])
def test_the_bot_and_a_member_are_never_merged(tmp_path: Path, order: tuple[str, str]) -> None:
    """Merging the bot's account with a member's gave one of them the other's words."""
    data = _replayed_with_the_bot(tmp_path)
    result = CliRunner().invoke(cli, ["people", "merge", *order, "--chat", "replay:g1", *data])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "(account bot) is the bot's own account and the other is a member's" in result.output
    assert "nothing was merged" in result.output
    listed = CliRunner().invoke(cli, ["people", "list", "--chat", "replay:g1", "--json", *data])
    assert listed.exit_code == 0, listed.output
    assert len(json.loads(listed.output)) == 3, "both accounts are still there"
    _bot_still_said_it(data)
    members = CliRunner().invoke(cli, ["people", "merge", "u1", "u2", "--chat", "replay:g1", *data])
    assert members.exit_code == 0 and "merged #" in members.output


def test_a_member_who_left_is_listed_and_shown_as_left(tmp_path: Path) -> None:
    """`people list`, `people show` and `who` showed a member who had left like any other member."""
    said = {"type": "message", "date_unixtime": "1772366460"}
    export = {
        "name": "群",
        "type": "private_supergroup",
        "id": 55,
        "messages": [
            said | {"id": 1, "from": "Lily", "from_id": "user1", "text": "周六去爬山吗"},
            said | {"id": 2, "from": "Bob", "from_id": "user2", "text": "好啊"},
            {"id": 3, "type": "service", "date_unixtime": "1772366520", "actor": "Bob", "actor_id": "user2"}
            | {"action": "remove_members", "members": ["Bob"], "text": ""},
        ],
    }
    path = tmp_path / "result.json"
    path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    data = ["--data-dir", str(tmp_path / "d")]
    imported = CliRunner().invoke(cli, ["import", "telegram", str(path), "--no-progress", *data])
    assert imported.exit_code == 0, imported.output
    chat = ["--chat", "telegram:-10055", *data]
    listed = CliRunner().invoke(cli, ["people", "list", *chat])
    assert listed.exit_code == 0, listed.output
    lines = {line.split("\t")[1]: line for line in listed.output.splitlines()}
    assert lines["Bob"].endswith("\tleft 2026-03-01") and "left" not in lines["Lily"]
    shown = CliRunner().invoke(cli, ["people", "show", "2", "--json", *chat])
    assert json.loads(shown.output)["left_at"] == "2026-03-01T12:02:00+00:00"
    assert (
        json.loads(CliRunner().invoke(cli, ["people", "show", "1", "--json", *chat]).output)["left_at"]
        is None
    )
    card = CliRunner().invoke(cli, ["people", "show", "2", *chat])
    assert card.output.startswith("【Bob(已退群)】")
    who = CliRunner().invoke(cli, ["who", "Bob", "--json", *chat])
    [match] = json.loads(who.output)["matches"]
    assert match["left_at"] == "2026-03-01T12:02:00+00:00"


def test_show_words_its_own_timeline_lines_in_the_chat_s_language_and_json_keeps_them_stored(
    tmp_path: Path,
) -> None:
    """Found by a QA pass: `people show` printed the timeline lines Qunyi writes itself (a group card
    changed) in Chinese in an English chat, where the card already said them in English. `--json` is
    the stored text, unchanged."""
    said = [
        ("Lily", "anyone up for hiking on Saturday morning?"),
        ("Lily", "we could take the early train out there"),
        ("Lily the Hiker", "I bought new boots for the trip"),
    ]
    log = tmp_path / "log.jsonl"
    lines = [
        json.dumps(
            {
                "chat": "g1",
                "message_id": f"m{i}",
                "sender_id": "u1",
                "sender_name": "Lily",
                "sender_card": card,
            }
            | {"text": text, "time": 1772366400 + 60 * i}
        )
        for i, (card, text) in enumerate(said)
    ]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data = ["--data-dir", str(tmp_path / "d")]
    assert CliRunner().invoke(cli, ["import", "replay", str(log), "--no-progress", *data]).exit_code == 0
    shown = CliRunner().invoke(cli, ["people", "show", "u1", "--chat", "replay:g1", *data])
    assert shown.exit_code == 0, shown.output
    assert "  group card changed to “Lily the Hiker” (was “Lily”) (messages #3)" in shown.output.splitlines()
    assert "群名片" not in shown.output
    stored = [t["text"] for t in _shown(data)["timeline"]]
    assert stored == ["群名片改为「Lily the Hiker」(原「Lily」)"], "--json gives the stored line"


def _facts(data: list[str]) -> list[tuple[str, str]]:
    return sorted((f["key"], f["value"]) for f in _shown(data)["facts"])


def _edit(data: list[str], *options: str) -> str:
    result = CliRunner().invoke(cli, ["people", "edit", "u1", "--chat", "replay:g1", *options, *data])
    assert result.exit_code == 0, result.output
    return result.output


def test_add_fact_and_remove_fact_key_value_change_one_value_and_set_fact_still_replaces_all(
    tmp_path: Path,
) -> None:
    """A person can like several things: `--set-fact likes=…` replaced them all and `--remove-fact likes`
    removed them all, so an admin could neither add one like nor take one back."""
    data = _imported(tmp_path)
    _edit(data, "--add-fact", "likes=猫", "--add-fact", "likes = 狗", "--add-fact", "likes=猫")
    assert _facts(data) == [("likes", "狗"), ("likes", "猫")], "a value held is not added twice"
    _edit(data, "--remove-fact", "likes=猫")
    assert _facts(data) == [("likes", "狗")]
    refused = CliRunner().invoke(
        cli,
        [
            "people",
            "edit",
            "u1",
            "--chat",
            "replay:g1",
            "--name",
            "新名字",
            "--remove-fact",
            "likes=猫",
            *data,
        ],
    )
    assert refused.exit_code == 1, refused.output
    assert "no fact likes = 猫 to remove (its values: 狗); nothing was changed" in refused.output
    assert _shown(data)["name"] != "新名字", "nothing of the edit was made"
    _edit(data, "--add-fact", "likes=猫")
    _edit(data, "--set-fact", "likes=鱼")
    assert _facts(data) == [("likes", "鱼")], "--set-fact replaces every value, as before"
    _edit(data, "--set-fact", "likes=鸟", "--add-fact", "likes=猫")
    assert _facts(data) == [("likes", "猫"), ("likes", "鸟")], "set first, then add"
    assert {(f["key"], f["value"]) for f in _shown(data)["superseded"]} == {
        ("likes", "狗"),
        ("likes", "猫"),
        ("likes", "鱼"),
    }
    _edit(data, "--add-fact", "likes=猫", "--remove-fact", "likes")
    assert _facts(data) == [], "--remove-fact KEY removes every value, as before"
