"""`qunyi import` for each format writes through the batch path; importing twice adds nothing."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli.main import cli
from memory.storage import DatabaseLocked
from tests.conftest import database_locked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
CASES = [
    ("telegram", "telegram_result.json", []),
    ("discord", "discord_export.json", []),
    ("qq", "qq_history.json", []),
    ("qq", "qq_manager.txt", ["--chat-id", "123456"]),
    ("replay", "replay.jsonl", []),
]


@pytest.mark.parametrize(("fmt", "name", "extra"), CASES)
def test_import_twice_adds_nothing(tmp_path: Path, fmt: str, name: str, extra: list[str]) -> None:
    path = FIXTURES / name
    assert path.is_file(), f"fixture {path} missing"
    args = ["import", fmt, str(path), "--data-dir", str(tmp_path / "d"), "--no-progress", *extra]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    imported = int(first.output.split(" messages imported")[0].split()[-1])
    assert imported > 0
    second = CliRunner().invoke(cli, args)
    assert second.exit_code == 0, second.output
    assert "0 messages imported" in second.output
    assert f"{imported} already known" in second.output


def test_wrong_format_file_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "x.json"
    bogus.write_text('{"not": "an export"}', encoding="utf-8")
    result = CliRunner().invoke(cli, ["import", "discord", str(bogus), "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 1
    assert "not a DiscordChatExporter JSON export" in result.output
    assert not (tmp_path / "d").exists(), "a refused file leaves no empty database behind"


def test_import_skips_an_ancient_time_and_a_broken_id_and_recall_still_works(tmp_path: Path) -> None:
    base = {"chat": "g1", "sender_id": "u1", "sender_name": "a", "time": "2026-03-01T20:15:00+08:00"}
    records = [
        {**base, "message_id": "m1", "text": "周六去爬山吗"},
        {**base, "message_id": "m2", "text": "爬山很久以前", "time": "0001-01-01T00:00:00+08:00"},
        {**base, "message_id": "m3\ud800", "text": "爬山坏id"},
        {**base, "message_id": "m4", "sender_id": "u2", "text": "好啊去爬山"},
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    data = ["--data-dir", str(tmp_path / "d")]
    result = CliRunner().invoke(cli, ["import", "replay", str(log), "--no-progress", *data])
    assert result.exit_code == 0, result.output
    assert "2 messages imported" in result.output and "2 malformed entries skipped" in result.output
    assert "line 2" in result.output and "line 3" in result.output
    recalled = CliRunner().invoke(cli, ["recall", "爬山", "--chat", "replay:g1", "--json", *data])
    assert recalled.exit_code == 0, recalled.output
    results = json.loads(recalled.output)["results"]
    assert {r["text"] for r in results if r["kind"] == "message"} == {"周六去爬山吗", "好啊去爬山"}
    # The import is long quiet, so its topic is packed (`[topics] pack_after_quiet_minutes`).
    topics = [(r["text"], r["speaker"]) for r in results if r["kind"] == "history"]
    assert topics == [("a: 周六去爬山吗 / a#u2: 好啊去爬山", "a, a#u2")]  # who took part, once


def test_a_skipped_entry_of_a_file_deep_in_folders_is_one_line(tmp_path: Path) -> None:
    """Its location was broken over lines at the console's width, the path apart from its line number."""
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 6)
    deep.mkdir(parents=True)
    log = deep / "log.jsonl"
    log.write_text('{"chat": "g1"}\n', encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["import", "replay", str(log), "--no-progress", "--data-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert any(str(log) in line and "line 1" in line for line in result.output.splitlines()), result.output


def test_import_prints_a_bad_line_with_markup_in_it_literally(tmp_path: Path) -> None:
    base = {"chat": "g1", "sender_id": "u1", "sender_name": "a", "time": "2026-03-01T20:15:00+08:00"}
    records = [
        {**base, "message_id": "m1", "text": "first"},
        {**base, "message_id": "m2", "text": "second", "mentions": "[/]"},
        {**base, "message_id": "m3", "text": "third", "mentions": ":fire:"},
        {**base, "message_id": "m4", "text": "fourth"},
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    args = ["import", "replay", str(log), "--no-progress", "--data-dir", str(tmp_path / "d")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "2 messages imported" in result.output and "2 malformed entries skipped" in result.output
    assert "got '[/]'" in result.output and "got ':fire:'" in result.output


@pytest.mark.parametrize("zone", ["/etc/localtime", "../../etc/passwd", "Mars/Olympus"])
def test_a_time_zone_that_is_no_zone_name_is_a_clear_error(tmp_path: Path, zone: str) -> None:
    args = ["import", "telegram", str(FIXTURES / "telegram_result.json"), "--tz", zone]
    result = CliRunner().invoke(cli, [*args, "--no-progress", "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 1
    assert f"unknown time zone {zone!r} (use an IANA name such as Asia/Shanghai)" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "d").exists()


def test_a_broken_utf16_qq_text_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "odd.txt"
    path.write_bytes(b"\xff\xfe\x31\x00\x32")
    result = CliRunner().invoke(cli, ["import", "qq", str(path), "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 1
    assert "not UTF-16 text" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "d").exists()


def test_a_second_message_under_a_taken_id_is_reported_not_silently_dropped(tmp_path: Path) -> None:
    base = {"chat": "g1", "message_id": "m1", "sender_name": "a", "time": "2026-03-01T20:00:00+08:00"}
    records = [
        {**base, "sender_id": "u1", "text": "周六去爬山"},
        {**base, "sender_id": "u2", "text": "我带火锅底料"},
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    for command in (["import", "replay"], ["replay"]):
        data = ["--data-dir", str(tmp_path / command[0])]
        result = CliRunner().invoke(cli, [*command, str(log), "--no-progress", *data])
        assert result.exit_code == 0, result.output
        output = " ".join(result.output.split())
        assert "message m1: malformed: its id is" in output and "0 already known" in output, command


def test_a_database_locked_by_another_process_is_a_clear_error(tmp_path: Path) -> None:
    data = tmp_path / "d"
    args = ["import", "replay", str(FIXTURES / "replay.jsonl"), "--data-dir", str(data), "--no-progress"]
    config = tmp_path / "config.toml"
    config.write_text("[storage]\nbusy_timeout_ms = 200\n", encoding="utf-8")
    assert CliRunner().invoke(cli, [*args, "--config", str(config)]).exit_code == 0
    extra = tmp_path / "more.jsonl"
    line = {"chat": "g1", "message_id": "new", "sender_id": "u1", "sender_name": "a", "time": 1772367300}
    extra.write_text(json.dumps(line | {"text": "后来的消息"}) + "\n", encoding="utf-8")
    locked_args = ["import", "replay", str(extra), "--data-dir", str(data), "--no-progress"]
    with database_locked(data / "qunyi.db"):
        result = CliRunner().invoke(cli, [*locked_args, "--config", str(config), "--catch-up-rounds", "0"])
    assert result.exit_code == 1, result.output
    assert "stayed locked" in result.output and "Traceback" not in result.output
    assert not isinstance(result.exception, DatabaseLocked)


def _person_after_importing(tmp_path: Path, *logs: list[dict[str, str]]) -> dict[str, object]:
    """Import each log in turn (replay JSONL) and return `people show u1 --json` for chat g1."""
    data = ["--data-dir", str(tmp_path / "d")]
    for number, records in enumerate(logs):
        log = tmp_path / f"log{number}.jsonl"
        log.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
        result = CliRunner().invoke(cli, ["import", "replay", str(log), "--no-progress", *data])
        assert result.exit_code == 0, result.output
    shown = CliRunner().invoke(cli, ["people", "show", "u1", "--chat", "replay:g1", "--json", *data])
    assert shown.exit_code == 0, shown.output
    person: dict[str, object] = json.loads(shown.output)
    return person


def test_importing_older_history_keeps_the_current_nickname_and_card(tmp_path: Path) -> None:
    base = {"chat": "g1", "sender_id": "u1"}
    newer = [
        {
            **base,
            "message_id": "m10",
            "sender_name": "小红新名",
            "sender_card": "红姐",
            "time": "2026-03-10T20:15:00+08:00",
            "text": "现在叫新名字了",
        },
    ]
    older = [
        {
            **base,
            "message_id": "m1",
            "sender_name": "小红",
            "sender_card": "红红",
            "time": "2026-01-01T20:15:00+08:00",
            "text": "很早以前说的话",
        },
    ]
    person = _person_after_importing(tmp_path, newer, older)
    assert (person["nickname"], person["card"]) == ("小红新名", "红姐")
    aliases = {a["alias"] for a in person["aliases"]}  # type: ignore[attr-defined]
    assert {"小红", "红红"} <= aliases  # the old names are still known, as aliases


def test_a_card_change_on_the_timeline_follows_message_time_not_import_order(tmp_path: Path) -> None:
    base = {"chat": "g1", "sender_id": "u1", "sender_name": "小红"}
    january = {
        **base,
        "message_id": "m1",
        "sender_card": "红红",
        "time": "2026-01-01T20:15:00+08:00",
        "text": "很早以前说的话",
    }
    february = {
        **base,
        "message_id": "m2",
        "sender_card": "小红帽",
        "time": "2026-02-01T20:15:00+08:00",
        "text": "二月说的话",
    }
    march = {
        **base,
        "message_id": "m10",
        "sender_card": "红姐",
        "time": "2026-03-10T20:15:00+08:00",
        "text": "现在叫新名字了",
    }
    person = _person_after_importing(tmp_path, [march], [january], [february])
    notes = [entry["text"] for entry in person["timeline"]]  # type: ignore[attr-defined]
    assert not any("原「红姐」" in note for note in notes), notes  # the newest card is no former one
    assert "群名片改为「小红帽」(原「红红」)" in notes


def test_a_replay_log_is_imported_under_the_platform_given(tmp_path: Path) -> None:
    record = {
        "chat": "123456",
        "message_id": "m1",
        "sender_id": "20002",
        "sender_name": "小红",
        "time": "2026-03-01T20:15:00+08:00",
        "text": "周六去爬山吗",
    }
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    data = ["--data-dir", str(tmp_path / "d"), "--no-progress"]
    result = CliRunner().invoke(cli, ["import", "replay", str(log), "--platform", "qq", *data])
    assert result.exit_code == 0, result.output
    recall = ["recall", "爬山", "--chat", "qq:123456", "--data-dir", str(tmp_path / "d")]
    recalled = CliRunner().invoke(cli, recall)
    assert recalled.exit_code == 0, recalled.output
    assert "周六去爬山吗" in recalled.output
    wrong = CliRunner().invoke(cli, ["import", "discord", str(log), "--platform", "qq", *data])
    assert wrong.exit_code == 2 and "--platform is for the replay format" in wrong.output


@pytest.mark.parametrize("fmt", ["telegram", "discord", "replay"])
def test_a_chat_id_for_an_export_that_names_its_chats_is_refused_before_anything_is_imported(
    fmt: str, tmp_path: Path
) -> None:
    """Found by the fifth QA pass: `--chat-id` (the group number of a QQ text export) given with
    another format was ignored without a word: the messages went to the export's own chat."""
    export = tmp_path / "导出 文件.json"
    export.write_text("{}", encoding="utf-8")
    data = tmp_path / "d"
    args = ["import", fmt, str(export), "--chat-id", "-1001234", "--data-dir", str(data), "--no-progress"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and f"--chat-id is for the qq format (a {fmt} export names its chats)" in (
        result.output
    )
    assert not data.exists()


def test_importing_the_same_history_after_a_forget_with_messages_brings_none_of_them_back(
    tmp_path: Path,
) -> None:
    """Telegram exports hold the whole history: re-importing one recorded every deleted message again."""
    base = {"chat": "g1", "time": "2026-03-01T20:15:00+08:00"}
    records = [
        {**base, "message_id": "m1", "sender_id": "u1", "sender_name": "小红", "text": "银行卡密码是 778899"},
        {**base, "message_id": "m2", "sender_id": "u2", "sender_name": "阿明", "text": "周六去爬山吗"},
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    data = ["--data-dir", str(tmp_path / "d")]
    first = CliRunner().invoke(cli, ["import", "replay", str(log), "--no-progress", *data])
    assert first.exit_code == 0 and "2 messages imported" in first.output, first.output
    forgot = CliRunner().invoke(
        cli, ["people", "forget", "小红", "--chat", "replay:g1", "--remove-messages", "--yes", *data]
    )
    assert forgot.exit_code == 0, forgot.output
    again = CliRunner().invoke(cli, ["import", "replay", str(log), "--no-progress", *data])
    assert again.exit_code == 0, again.output
    said = " ".join(again.output.split())
    assert "0 messages imported, 1 already known" in said
    assert "1 messages of people who had them deleted passed over" in said
    recalled = CliRunner().invoke(cli, ["recall", "银行卡密码", "--chat", "replay:g1", "--json", *data])
    assert "778899" not in recalled.output
    later = {**records[0], "message_id": "m3", "time": "2099-01-01T00:00:00+08:00", "text": "我又回来了"}
    log.write_text(json.dumps(later, ensure_ascii=False) + "\n", encoding="utf-8")
    back = CliRunner().invoke(cli, ["import", "replay", str(log), "--no-progress", *data])
    assert "1 messages imported" in " ".join(back.output.split()), "what they say after it is recorded"


def test_a_cut_short_export_is_a_one_line_error_and_imports_nothing(tmp_path: Path) -> None:
    whole = (FIXTURES / "telegram_result.json").read_bytes()
    cut = tmp_path / "result.json"
    cut.write_bytes(whole[: whole.index(b'"id": 5')])  # inside the messages, after four of them
    data = ["--data-dir", str(tmp_path / "d"), "--no-progress", "--catch-up-rounds", "0"]
    result = CliRunner().invoke(cli, ["import", "telegram", str(cut), *data])
    assert result.exit_code == 1
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert "the file ends in the middle, after 4 message entries" in result.output
    assert "nothing was imported" in result.output
    complete = CliRunner().invoke(cli, ["import", "telegram", str(FIXTURES / "telegram_result.json"), *data])
    assert complete.exit_code == 0, complete.output
    assert "7 messages imported, 0 already known" in " ".join(complete.output.split())


def test_a_chat_imported_as_a_group_then_as_private_stays_a_group_with_a_warning(tmp_path: Path) -> None:
    """Found by QA pass 18: importers that took private talks for groups were fixed, but a chat made a
    group before kept that kind on re-import without a word. A chat row does not say whether an import
    or the live bot made it, so the kind is not changed; the import names each such chat instead."""
    line = {"chat": "d1", "sender_id": "u1", "sender_name": "Lily", "time": 1772367300, "text": "你好"}
    data = ["--data-dir", str(tmp_path / "d"), "--no-progress"]
    first, again = tmp_path / "group.jsonl", tmp_path / "private.jsonl"
    first.write_text(json.dumps(line | {"message_id": "m1"}) + "\n", encoding="utf-8")
    again.write_text(json.dumps(line | {"message_id": "m2", "chat_kind": "private"}) + "\n", encoding="utf-8")
    quiet = CliRunner().invoke(cli, ["import", "replay", str(first), *data])
    assert quiet.exit_code == 0 and "warning" not in quiet.output
    result = CliRunner().invoke(cli, ["import", "replay", str(again), *data])
    assert result.exit_code == 0, result.output
    assert "1 messages imported" in result.output
    assert "warning: chat replay:d1 stays a group chat" in " ".join(result.output.split())
