"""Each importer on a small fixture written from the format's documentation."""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from adapters.importers import FORMATS, ImportFileError, ImportIssue, IssueKind, iter_import
from adapters.importers.replay_jsonl import parse_record, to_record
from memory.types import ChatKind, ChatMessage, SegmentKind

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "importers"
CST = timezone(timedelta(hours=8))


def run(fmt: str, name: str, **options: object) -> tuple[list[ChatMessage], list[ImportIssue]]:
    items = list(iter_import(fmt, FIXTURES / name, **options))
    messages = [i for i in items if isinstance(i, ChatMessage)]
    issues = [i for i in items if isinstance(i, ImportIssue)]
    assert len(messages) + len(issues) == len(items)
    return messages, issues


def imported_chats(fmt: str, path: Path, content: str) -> set[tuple[str, ChatKind]]:
    """The (chat id, kind) of every message of `content`, written to `path` and imported as `fmt`."""
    path.write_text(content, encoding="utf-8")
    return {(m.chat_id, m.chat_kind) for m in iter_import(fmt, path) if isinstance(m, ChatMessage)}


def test_telegram_desktop_export() -> None:
    messages, issues = run("telegram", "telegram_result.json", bot_id="999")
    by_id = {m.message_id: m for m in messages}
    assert sorted(by_id) == ["2", "3", "4", "5", "7", "8", "9"]
    assert {m.chat_id for m in messages} == {"-1001987654321"}  # the Bot API id of the supergroup
    first = by_id["2"]
    assert first.sender_id == "111" and first.sender_name == "Alice" and first.chat_name == "周末开黑群"
    assert first.time == datetime(2026, 3, 1, 12, 1, tzinfo=UTC)
    reply = by_id["3"]
    assert reply.reply_to == "2" and reply.text == "可以，@qunyi_bot 记一下，叫上 Carol"
    assert reply.mentions == ("@qunyi_bot", "333")
    assert by_id["4"].text == "[image] 装备截图" and by_id["4"].segments[0].kind is SegmentKind.IMAGE
    assert by_id["5"].text == "[sticker 👍]" and by_id["5"].segments[0].target is None
    assert by_id["7"].is_bot and by_id["8"].to_bot  # a reply to the bot's message
    forward = by_id["9"]  # `forwarded_from`: Dave's words, re-shared by Carol
    assert forward.forwarded and forward.sender_id == "333" and forward.text == "Bob 我是素食者，住在柏林"
    assert forward.mentions == () and not forward.to_bot, "the @ of a forward was written to someone else"
    assert not any(m.forwarded for m in messages if m.message_id != "9")
    assert [(i.kind, i.location) for i in issues] == [
        (IssueKind.SKIPPED, "messages[0] (id 1)"),
        (IssueKind.MALFORMED, "messages[5] (id 6)"),
    ]
    assert "invite_members" in issues[0].reason and "from_id" in issues[1].reason


def test_telegram_full_account_export_maps_chat_ids() -> None:
    messages, issues = run("telegram", "telegram_full_export.json", tz=CST)
    assert not issues
    private, group = messages
    assert (private.chat_id, private.chat_kind) == ("222", ChatKind.PRIVATE)
    assert private.time == datetime(2026, 3, 2, 9, 0, tzinfo=CST)  # no date_unixtime: local time in `tz`
    assert (group.chat_id, group.chat_kind) == ("-4444", ChatKind.GROUP)


@pytest.mark.parametrize(
    ("chat_type", "chat_id", "expected"),
    [
        ("personal_chat", 222, ("222", ChatKind.PRIVATE)),
        ("private_supergroup", 55, ("-10055", ChatKind.GROUP)),
        # The account's service chats, and a type the importer does not know, were taken for groups:
        # under a global recall scope every chat would have read the login codes or a private talk.
        ("replies", 708513, ("708513", ChatKind.PRIVATE)),
        ("verification_codes", 489000, ("489000", ChatKind.PRIVATE)),
        ("", 333, ("333", ChatKind.PRIVATE)),
        ("some_future_type", -4444, ("-4444", ChatKind.GROUP)),  # a Bot API group id as written
    ],
)
def test_telegram_chat_kinds_keep_private_talks_private(
    tmp_path: Path, chat_type: str, chat_id: int, expected: tuple[str, ChatKind]
) -> None:
    message = {"id": 1, "type": "message", "date_unixtime": "1772366460", "from": "Bob", "from_id": "user2"}
    export = {"name": "x", "type": chat_type, "id": chat_id, "messages": [message | {"text": "验证码 12345"}]}
    content = json.dumps(export, ensure_ascii=False)
    assert imported_chats("telegram", tmp_path / "result.json", content) == {expected}


def test_telegram_full_export_imports_the_chats_the_account_has_left(tmp_path: Path) -> None:
    """`left_chats.list` used to be passed over without a word."""
    export = json.loads((FIXTURES / "telegram_full_export.json").read_text(encoding="utf-8"))
    left = {"name": "旧群", "type": "private_supergroup", "id": 55, "messages": []}
    message = {"id": 1, "type": "message", "date_unixtime": "1772366460", "from": "Bob", "from_id": "user2"}
    left["messages"] = [message | {"text": "退群前的话"}, {"id": 2, "type": "message"}]
    export["left_chats"] = {"about": "groups you left", "list": [left]}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    items = list(iter_import("telegram", path, tz=CST))
    [old] = [i for i in items if isinstance(i, ChatMessage) and i.chat_id == "-10055"]
    assert old.text == "退群前的话" and old.chat_name == "旧群"
    [issue] = [i for i in items if isinstance(i, ImportIssue)]
    assert issue.location == "left_chats.list[0].messages[1] (id 2)"


def test_discord_chat_exporter() -> None:
    messages, issues = run("discord", "discord_export.json", bot_id="800000000000000009")
    by_id = {m.message_id[-3:]: m for m in messages}
    assert sorted(by_id) == ["101", "102", "104"]
    ask = by_id["101"]
    assert ask.chat_id == "900000000000000010" and ask.chat_name == "general"
    assert ask.display_name == "Alice (raid lead)" and ask.sender_name == "alice"
    assert ask.to_bot and ask.mentions == ("800000000000000009",)
    assert ask.time == datetime(2026, 3, 1, 12, 1, 0, 123456, tzinfo=UTC)
    answer = by_id["102"]
    assert answer.reply_to == "900000000000000101" and answer.sender_card == ""
    assert answer.text == "Saturday 8pm, see screenshot [image]"
    assert answer.segments[-1].target == "https://cdn.discordapp.com/attachments/1/2/plan.png"
    assert by_id["104"].text == "[sticker thumbs up]"
    assert [(i.kind, i.location[:12]) for i in issues] == [
        (IssueKind.SKIPPED, "messages[0] "),
        (IssueKind.SKIPPED, "messages[3] "),
        (IssueKind.MALFORMED, "messages[5] "),
    ]
    assert "not ISO 8601" in issues[2].reason


@pytest.mark.parametrize(
    ("channel_type", "kind"),
    [
        ("GuildTextChat", ChatKind.GROUP),
        ("GuildPrivateThread", ChatKind.GROUP),
        ("DirectTextChat", ChatKind.PRIVATE),
        # A group DM, outside any server, was taken for a server's channel: read by every chat under a
        # global recall scope.
        ("DirectGroupTextChat", ChatKind.PRIVATE),
    ],
)
def test_discord_chat_exporter_direct_messages_are_private(
    tmp_path: Path, channel_type: str, kind: ChatKind
) -> None:
    export = json.loads((FIXTURES / "discord_export.json").read_text(encoding="utf-8"))
    export["channel"]["type"] = channel_type
    content = json.dumps(export, ensure_ascii=False)
    assert imported_chats("discord", tmp_path / "dm.json", content) == {(export["channel"]["id"], kind)}


def test_discord_chat_exporter_keeps_bot_answers_to_slash_and_context_menu_commands() -> None:
    """DiscordChatExporter writes `type` as its MessageKind enum's name, and that enum names no kind past
    Reply (19): a slash-command answer (Discord type 20) is written "20" and a context-menu command's
    answer (23) "23". Both were skipped as system messages, so the bot's own answers were lost."""
    messages, issues = run("discord", "discord_export_commands.json", bot_id="800000000000000009")
    assert [(m.message_id[-3:], m.is_bot) for m in messages] == [
        ("201", False),
        ("202", True),
        ("203", False),
    ]
    assert messages[1].text == "上次说的是周六早上八点，在北门集合。"
    assert messages[2].text == "Translated: Saturday 8am at the north gate."
    assert [(i.kind, i.reason) for i in issues] == [(IssueKind.SKIPPED, "system message: ThreadCreated")]


def test_qq_napcat_history_dump() -> None:
    messages, issues = run("qq", "qq_history.json")
    assert [m.message_id for m in messages] == ["-1904311119", "77", "78"]
    asked, bot, thanks = messages
    assert asked.chat_id == "123456" and asked.display_name == "红红" and asked.platform == "qq"
    assert bot.is_bot and bot.reply_to == "-1904311119"
    assert thanks.to_bot and thanks.reply_to == "77"  # resolved within the dump
    assert [(i.kind, i.location) for i in issues] == [
        (IssueKind.MALFORMED, "messages[3] (message_id 79)"),
        (IssueKind.SKIPPED, "messages[4] (message_id 78)"),
    ]


def test_a_reply_in_a_qq_dump_is_resolved_in_its_own_chat(tmp_path: Path) -> None:
    """Message ids recur across groups: a reply to id 77 in group B is no reply to the bot's 77 in A."""

    def event(group: int, user: int, message_id: int, message: object) -> dict[str, object]:
        return {
            "self_id": 10001,
            "user_id": user,
            "time": 1772366460 + message_id,
            "message_id": message_id,
            "message_type": "group",
            "group_id": group,
            "sender": {"user_id": user, "nickname": f"u{user}"},
            "message": message,
            "post_type": "message_sent" if user == 10001 else "message",
        }

    dump = [
        event(111, 10001, 77, "记下了"),
        event(222, 20003, 77, "我说的"),
        event(
            222,
            20004,
            78,
            [{"type": "reply", "data": {"id": "77"}}, {"type": "text", "data": {"text": "对"}}],
        ),
        event(
            111,
            20005,
            79,
            [{"type": "reply", "data": {"id": "77"}}, {"type": "text", "data": {"text": "谢"}}],
        ),
    ]
    path = tmp_path / "two_groups.json"
    path.write_text(json.dumps(dump), encoding="utf-8")
    replies = {m.message_id: m for m in iter_import("qq", path) if isinstance(m, ChatMessage)}
    assert not replies["78"].to_bot, "group 222's own message 77 was a member's"
    assert replies["79"].to_bot, "in group 111, 77 is the bot's"


def test_qq_message_manager_text() -> None:
    messages, issues = run("qq", "qq_manager.txt", chat_id="123456")
    assert [m.sender_id for m in messages] == ["20002", "aming@example.com", "aming@example.com", "20002"]
    red, aming, aming_again, morning = messages
    assert red.chat_id == "123456" and red.chat_name == "周末开黑群" and red.sender_name == "小红"
    assert red.time == datetime(2017, 2, 25, 10, 41, 2, tzinfo=CST)
    assert aming.text == "可以\n我带[image]" and aming.segments[-1].kind is SegmentKind.IMAGE
    assert aming.message_id != aming_again.message_id  # identical lines in the same second stay two
    assert morning.time == datetime(2017, 2, 5, 9, 5, 3, tzinfo=CST) and morning.text == "早[face]"
    assert [(i.kind, i.location, i.reason) for i in issues] == [
        (IssueKind.SKIPPED, "line 9", "system message"),
        (IssueKind.SKIPPED, "line 23", "empty message"),
    ]


def test_qq_text_without_chat_id_uses_the_section_name() -> None:
    messages, _ = run("qq", "qq_manager.txt")
    assert {m.chat_id for m in messages} == {"周末开黑群"}


def test_qq_text_in_gb18030_is_read(tmp_path: Path) -> None:
    path = tmp_path / "gbk.txt"
    path.write_bytes((FIXTURES / "qq_manager.txt").read_text(encoding="utf-8").encode("gb18030"))
    messages = [i for i in FORMATS["qq"](path) if isinstance(i, ChatMessage)]
    assert len(messages) == 4 and messages[0].text == "周六晚上八点打本？"


def test_replay_jsonl() -> None:
    messages, issues = run("replay", "replay.jsonl")
    assert [m.message_id for m in messages] == ["m1", "m2", "6"]
    first, second, third = messages
    assert first.platform == "replay" and first.chat_name == "周末开黑群" and first.display_name == "红红"
    assert first.time == datetime(2026, 3, 1, 20, 15, tzinfo=CST)
    assert second.reply_to == "m1" and second.mentions == ("u1",)
    assert second.time == datetime.fromtimestamp(1772367360, UTC)
    assert third.sender_id == "3" and third.time == datetime(2026, 3, 1, 12, 20, tzinfo=UTC)
    assert [i.location for i in issues] == ["line 4", "line 5", "line 6"]
    assert issues[0].reason == "not JSON: Unterminated string starting at column 121"
    assert "sender_name" in issues[1].reason
    assert "no UTC offset" in issues[2].reason


def test_replay_platform_and_default_timezone_are_parameters() -> None:
    messages, issues = run("replay", "replay.jsonl", platform="qq", default_tz=CST)
    assert {m.platform for m in messages} == {"qq"}
    assert len(messages) == 4 and len(issues) == 2


def test_replay_record_round_trip() -> None:
    original = parse_record(
        json.dumps(
            {
                "chat": "g1",
                "message_id": "m2",
                "sender_id": "u2",
                "sender_name": "阿明",
                "sender_card": "明",
                "time": "2026-03-01T20:16:00+08:00",
                "text": "好",
                "reply_to": "m1",
                "mentions": ["u1"],
            }
        )
    )
    assert parse_record(json.dumps(to_record(original))) == original


REPLAY_LINE = {
    "chat": "g1",
    "message_id": "m1",
    "sender_id": "u1",
    "sender_name": "小红",
    "time": "2026-03-01T20:15:00+08:00",
    "text": "明天全员停电",
}


def test_a_replay_line_without_forwarded_reads_as_before_and_is_written_without_it() -> None:
    message = parse_record(json.dumps(REPLAY_LINE))
    assert not message.forwarded
    assert message == parse_record(json.dumps(REPLAY_LINE | {"forwarded": False}))
    assert to_record(message) == REPLAY_LINE, "an old file's line is written back as it was"


def test_a_forwarded_replay_line_is_read_and_written_as_a_forward() -> None:
    message = parse_record(json.dumps(REPLAY_LINE | {"forwarded": True}))
    assert message.forwarded and message.text == "明天全员停电"
    assert to_record(message)["forwarded"] is True
    assert parse_record(json.dumps(to_record(message))) == message


def test_a_replay_line_with_a_forwarded_that_is_not_a_boolean_is_reported_and_the_rest_kept(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.jsonl"
    lines = [REPLAY_LINE | {"forwarded": "yes"}, REPLAY_LINE | {"message_id": "m2", "forwarded": 1}]
    lines.append(REPLAY_LINE | {"message_id": "m3", "forwarded": True})
    log.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n", encoding="utf-8")
    items = list(iter_import("replay", log))
    issues = [i for i in items if isinstance(i, ImportIssue)]
    assert [(i.location, i.reason) for i in issues] == [
        ("line 1", "forwarded must be true or false, got 'yes'"),
        ("line 2", "forwarded must be true or false, got 1"),
    ]
    assert [(m.message_id, m.forwarded) for m in items if isinstance(m, ChatMessage)] == [("m3", True)]


@pytest.mark.parametrize("fmt", ["telegram", "discord", "qq"])
def test_a_file_that_is_not_the_format_raises_a_clear_error(fmt: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": [1, 2', encoding="utf-8")
    with pytest.raises(ImportFileError, match="not valid JSON"):
        list(iter_import(fmt, bad))


@pytest.mark.parametrize("fmt", ["telegram", "discord", "qq"])
@pytest.mark.parametrize(
    "content", [b"", b"\xef\xbb\xbf", b" \n\r\n\t\n"], ids=["0 bytes", "a BOM", "blank lines"]
)
def test_an_empty_export_file_is_refused(fmt: str, content: bytes, tmp_path: Path) -> None:
    """The QQ importer read an empty file as a text export without messages: `qunyi import` made a
    data directory for it and said "0 messages imported", where the JSON formats said the file is
    empty. (An empty replay log stays a log of no messages: `qunyi replay` of one makes a database.)"""
    empty = tmp_path / "export.txt"
    empty.write_bytes(content)
    with pytest.raises(ImportFileError, match="empty"):
        list(iter_import(fmt, empty))


def test_progress_reaches_the_total() -> None:
    calls: list[tuple[int, int]] = []
    list(iter_import("discord", FIXTURES / "discord_export.json", progress=lambda d, t: calls.append((d, t))))
    assert calls[-1] == (6, 6) and len(calls) == 6


def test_unknown_format_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown import format"):
        iter_import("whatsapp", FIXTURES / "replay.jsonl")


def test_replay_lines_with_a_time_out_of_range_or_a_broken_id_are_reported(tmp_path: Path) -> None:
    good = {"chat": "g1", "sender_id": "u1", "sender_name": "a", "time": "2026-03-01T20:15:00+08:00"}
    records = [
        {**good, "message_id": "m1", "text": "first"},
        {**good, "message_id": "m2", "text": "ancient", "time": "0001-01-01T00:00:00+08:00"},
        {**good, "message_id": "m3", "text": "far future", "time": "9999-12-31T23:59:59-08:00"},
        {**good, "message_id": "m4\ud800", "text": "broken id"},
        {**good, "message_id": "m5", "text": "last"},
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    items = list(iter_import("replay", path))
    assert [i.message_id for i in items if isinstance(i, ChatMessage)] == ["m1", "m5"]
    issues = [i for i in items if isinstance(i, ImportIssue)]
    assert [(i.location, i.kind) for i in issues] == [(f"line {n}", IssueKind.MALFORMED) for n in (2, 3, 4)]
    assert "out of range" in issues[0].reason and "out of range" in issues[1].reason
    assert "message_id" in issues[2].reason and "lone surrogate" in issues[2].reason


def test_telegram_chat_whose_messages_is_not_a_list_is_reported_and_the_next_chat_imported(
    tmp_path: Path,
) -> None:
    export = json.loads((FIXTURES / "telegram_full_export.json").read_text(encoding="utf-8"))
    export["chats"]["list"][0]["messages"] = 5
    path = tmp_path / "result.json"
    path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    calls: list[tuple[int, int]] = []
    items = list(iter_import("telegram", path, progress=lambda d, t: calls.append((d, t))))
    assert [i.chat_id for i in items if isinstance(i, ChatMessage)] == ["-4444"]
    [issue] = [i for i in items if isinstance(i, ImportIssue)]
    assert issue.location == "chats.list[0]." and "no 'messages' list" in issue.reason
    assert calls == [(1, 1)]


def test_qq_text_with_a_utf16_mark_but_broken_utf16_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "odd.txt"
    path.write_bytes(b"\xff\xfe\x31\x00\x32")  # a byte order mark, then an odd number of bytes
    with pytest.raises(ImportFileError, match="UTF-16 byte order mark but is not UTF-16 text"):
        list(iter_import("qq", path))


def test_qq_text_holding_several_chats_is_refused_with_one_chat_id(tmp_path: Path) -> None:
    """A group and a friend's private talk must not both land in the group named by --chat-id."""
    friend = "消息分组:我的好友\n" + "=" * 64 + "\n消息对象:阿明\n" + "=" * 64 + "\n\n"
    friend += "2017-02-26 10:41:30 阿明(30003)\n私下说的话\n"
    path = tmp_path / "all.txt"
    path.write_text(
        (FIXTURES / "qq_manager.txt").read_text(encoding="utf-8") + "\n" + "=" * 64 + "\n" + friend
    )
    with pytest.raises(ImportFileError, match=r"holds 2 chats \(周末开黑群, 阿明\) but one chat id 123456"):
        list(iter_import("qq", path, chat_id="123456"))
    by_section = {(m.chat_id, m.chat_kind) for m in iter_import("qq", path) if isinstance(m, ChatMessage)}
    assert by_section == {("周末开黑群", ChatKind.GROUP), ("private-阿明", ChatKind.PRIVATE)}
    # a friend's file with the friend's QQ joins the live private chat, not the group of that number
    path.write_text(friend, encoding="utf-8")
    found = [m for m in iter_import("qq", path, chat_id="30003") if isinstance(m, ChatMessage)]
    assert {(m.chat_id, m.chat_kind) for m in found} == {("private-30003", ChatKind.PRIVATE)}


@pytest.mark.parametrize(
    ("category", "kind"),
    [
        ("我的QQ群", ChatKind.GROUP),
        ("我的群聊", ChatKind.GROUP),
        ("我的讨论组", ChatKind.GROUP),
        ("我的好友", ChatKind.PRIVATE),
        ("最近联系人", ChatKind.PRIVATE),
        # The friend groups QQ makes (or the owner names), strangers and one's own devices: one-to-one
        # talks, which were taken for groups, so shared with every chat under a global recall scope.
        ("家人", ChatKind.PRIVATE),
        ("同学", ChatKind.PRIVATE),
        ("陌生人", ChatKind.PRIVATE),
        ("我的设备", ChatKind.PRIVATE),
    ],
)
def test_qq_text_sections_are_groups_only_under_a_group_category(
    tmp_path: Path, category: str, kind: ChatKind
) -> None:
    rule = "=" * 64
    said = "2017-02-26 10:41:30 阿明(30003)\n说的话\n"
    content = f"消息分组:{category}\n{rule}\n消息对象:阿明\n{rule}\n\n{said}"
    chat = "阿明" if kind is ChatKind.GROUP else "private-阿明"
    assert imported_chats("qq", tmp_path / "one.txt", content) == {(chat, kind)}


def test_qq_text_message_with_a_line_of_equals_signs_stays_whole(tmp_path: Path) -> None:
    path = tmp_path / "eq.txt"
    body = "2017-02-25 10:41:02 小红(20002)\n上半场\n=====\n下半场\n"
    path.write_text("消息对象:周末开黑群\n" + "=" * 64 + "\n\n" + body, encoding="utf-8")
    messages, issues = [], []
    for item in iter_import("qq", path):
        (messages if isinstance(item, ChatMessage) else issues).append(item)
    assert [m.text for m in messages] == ["上半场\n=====\n下半场"] and not issues


def test_a_large_replay_log_is_read_line_by_line_not_whole(tmp_path: Path) -> None:
    """A log far larger than any one line is never held in memory as a whole (40 MB here)."""
    record = {"chat": "g1", "message_id": "m1", "sender_id": "u1", "sender_name": "小红", "time": 1772367360}
    log = tmp_path / "big.jsonl"
    with log.open("w", encoding="utf-8") as handle:
        handle.write((" " * 1_000_000 + "\n") * 40)  # long blank lines, skipped as blank lines are
        handle.write(json.dumps(record | {"text": "周六去爬山吗"}, ensure_ascii=False) + "\n")
    progress: list[tuple[int, int]] = []
    tracemalloc.start()
    try:
        items = list(iter_import("replay", log, progress=lambda done, total: progress.append((done, total))))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000, f"peak {peak} bytes"
    assert [item.text for item in items if isinstance(item, ChatMessage)] == ["周六去爬山吗"]
    assert progress[-1] == (41, 41)


def _telegram_export(tmp_path: Path, **chat: object) -> Path:
    """A one-chat Telegram Desktop export of two messages, with `chat`'s keys over the defaults."""
    message = {"type": "message", "date_unixtime": "1772366460", "from": "Bob", "from_id": "user2"}
    messages = [message | {"id": 1, "text": "你好"}, message | {"id": 2, "text": "hi"}]
    export = {"name": "群", "type": "private_supergroup", "id": 55, "messages": messages} | chat
    path = tmp_path / "result.json"
    path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("kind", "raw", "chat_id"),
    [
        ("private_supergroup", -1001987654321, "-1001987654321"),
        ("public_channel", -1005, "-1005"),
        ("private_group", -4444, "-4444"),
    ],
)
def test_a_telegram_chat_id_already_in_bot_api_form_is_kept(
    kind: str, raw: int, chat_id: str, tmp_path: Path
) -> None:
    """A negative id used to get the prefix again ("-100-1001987654321", "--4444"): a chat no live
    message ever reaches."""
    items = list(iter_import("telegram", _telegram_export(tmp_path, type=kind, id=raw)))
    assert {i.chat_id for i in items if isinstance(i, ChatMessage)} == {chat_id}
    assert not [i for i in items if isinstance(i, ImportIssue)]


@pytest.mark.parametrize(("kind", "raw"), [("private_supergroup", -5), ("personal_chat", -222)])
def test_a_negative_telegram_chat_id_not_in_bot_api_form_is_a_clear_issue(
    kind: str, raw: int, tmp_path: Path
) -> None:
    items = list(iter_import("telegram", _telegram_export(tmp_path, type=kind, id=raw)))
    assert not [i for i in items if isinstance(i, ChatMessage)]
    [issue] = [i for i in items if isinstance(i, ImportIssue)]
    assert issue.kind is IssueKind.MALFORMED and f"chat id {raw}" in issue.reason


@pytest.mark.parametrize("raw", [None, "55", 5.5])
def test_a_telegram_chat_without_an_id_says_how_many_messages_it_kept_out(
    raw: object, tmp_path: Path
) -> None:
    """Found by the fifth QA pass: a one-chat export without an integer id was reported as
    "result.json:: malformed: chat id must be an integer, got None", counted as one malformed entry
    skipped while none of its messages was imported."""
    items = list(iter_import("telegram", _telegram_export(tmp_path, id=raw)))
    assert not [i for i in items if isinstance(i, ChatMessage)]
    [issue] = [i for i in items if isinstance(i, ImportIssue)]
    assert str(issue) == (
        f"{tmp_path / 'result.json'}:the chat: malformed: chat id must be an integer, got {raw!r}: "
        "none of its 2 messages is imported"
    )


@pytest.mark.parametrize("name", [["a"], {"first": "Bob"}, 7])
def test_a_telegram_sender_name_that_is_no_string_is_left_out_not_written_as_python(
    name: object, tmp_path: Path
) -> None:
    """A list `from` (or chat `name`) used to be stored as Python's repr, "['a']"."""
    path = _telegram_export(tmp_path, name=name)
    export = json.loads(path.read_text(encoding="utf-8"))
    export["messages"][0]["from"] = name
    path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    first, second = [i for i in iter_import("telegram", path) if isinstance(i, ChatMessage)]
    assert (first.sender_name, second.sender_name) == ("", "Bob")  # as a message without `from`
    assert first.chat_name == second.chat_name == ""


@pytest.mark.parametrize(
    ("response", "quoted"),
    [
        (
            {
                "status": "failed",
                "retcode": 1200,
                "data": None,
                "message": "获取消息失败",
                "wording": "群不存在",
            },
            "retcode 1200: 群不存在 / 获取消息失败",
        ),
        (
            {
                "status": "failed",
                "retcode": 100,
                "message": "bot not in group",
                "wording": "bot not in group",
            },
            "retcode 100: bot not in group",
        ),
        (
            {"retcode": 1404, "data": None, "wording": "不支持的API\n" + "很长" * 300},
            "retcode 1404: 不支持的API\\x0a很长",
        ),
    ],
)
def test_a_saved_failed_onebot_response_is_named_as_such_with_its_message(
    response: dict[str, object], quoted: str, tmp_path: Path
) -> None:
    """A NapCat answer saying the history request failed got the generic "expected a list of OneBot
    messages…"; the error now says what the file is and quotes the response's wording, cut short."""
    path = tmp_path / "history.json"
    path.write_text(json.dumps(response, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ImportFileError) as caught:
        list(iter_import("qq", path))
    message = str(caught.value)
    assert message.startswith(f"{path}: a failed OneBot API response, not message history: {quoted}")
    assert "\n" not in message and len(message) < len(str(path)) + 300


def test_discord_chat_exporter_kinds_by_name_keep_what_members_wrote() -> None:
    """A DiscordChatExporter naming Discord's newer kinds writes "ChatInputCommand" and
    "ContextMenuCommand" where older ones wrote "20" and "23": those answers were skipped as system
    messages. Now they are kept with Default and Reply; an answer with nothing in it is still empty, and
    every system kind, a thread's starter (a pointer to the parent channel's message) and a kind this
    importer does not know are reported as skipped, as before."""
    messages, issues = run("discord", "discord_export_kinds.json", bot_id="800000000000000009")
    assert [(m.message_id[-2:], m.is_bot, m.text) for m in messages] == [
        ("01", False, "周六几点集合？"),
        ("02", True, "八点，北门。"),
        ("03", True, "上次说的是周六早上八点。"),
        ("04", True, "Translated: Saturday 8am."),
    ]
    assert messages[1].reply_to == "900000000000000301"
    assert [i.reason for i in issues] == [
        "empty message (no content, attachments or stickers)",
        "system message: ThreadCreated",
        "system message: ThreadStarterMessage",
        "system message: ChannelPinnedMessage",
        "system message: RecipientAdd",
        "system message: GuildMemberJoin",
        "system message: Call",
        "system message: ChannelNameChange",
        "system message: GuildBoost",
        "system message: AutoModerationAction",
    ]
    assert all(i.kind is IssueKind.SKIPPED for i in issues)


def test_a_private_replay_line_is_read_and_written_as_private() -> None:
    message = parse_record(json.dumps(REPLAY_LINE | {"chat_kind": "private"}))
    assert message.chat_kind is ChatKind.PRIVATE
    assert to_record(message) == REPLAY_LINE | {"chat_kind": "private"}
    group = parse_record(json.dumps(REPLAY_LINE | {"chat_kind": "group"}))
    assert group == parse_record(json.dumps(REPLAY_LINE))
