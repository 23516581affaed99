import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import regex
from click.testing import CliRunner
from sqlalchemy import func, select

from adapters.importers import IssueKind
from bot.app import build_app
from bot.cli.main import cli
from bot.config import ConfigStore
from bot.config.settings import Settings
from bot.replay import replay, replay_clock
from bot.reply.pipeline import Outcome, Send
from memory.clock import ManualClock
from memory.models import Message
from memory.storage import DatabaseLocked
from memory.types import ChatKind, ChatMessage
from tests.conftest import T0, database_locked

LINES = [
    {
        "chat": "g1",
        "chat_name": "测试群",
        "message_id": "m1",
        "sender_id": "u1",
        "sender_name": "Lily",
        "sender_card": "莉莉",
        "time": "2026-03-01T20:15:00+08:00",
        "text": "周六去爬山吗？",
    },
    {
        "chat": "g1",
        "message_id": "m2",
        "sender_id": "u2",
        "sender_name": "Bob",
        "time": 1772367360,
        "text": "好啊，去西湖边那座山",
        "reply_to": "m1",
        "mentions": ["u1"],
    },
    {
        "chat": "g1",
        "message_id": "m3",
        "sender_id": "u1",
        "sender_name": "Lily",
        "time": 1772367420,
        "text": "/recall 西湖",
    },
]


def write_log(path: Path, extra_lines: list[str] = ()) -> Path:
    lines = [json.dumps(line, ensure_ascii=False) for line in LINES]
    lines[1:1] = extra_lines
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def test_replay_feeds_the_live_pipeline_and_reports_bad_lines(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", ["{not json", '{"chat": "g1"}'])
    clock = ManualClock(T0)
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", clock)
    try:
        report = await replay(app, clock, log)
        again = await replay(app, clock, log)
        async with app.db.read() as session:
            count = (await session.execute(select(func.count()).select_from(Message))).scalar_one()
    finally:
        await app.close()
    assert [p.location for p in report.problems] == ["line 2", "line 3"]
    assert "missing" in report.problems[1].reason
    assert report.recorded == 3
    assert len(report.replies) == 1 and "西湖" in report.replies[0][1]
    assert count == 4, "three messages and the bot's answer"
    assert again.recorded == 0 and again.duplicates == 3


def test_replay_cli_prints_summary(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl")
    result = CliRunner().invoke(cli, ["replay", str(log), "--data-dir", str(tmp_path / "d"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "3 messages recorded" in result.output
    assert "莉莉 (also Lily)" in result.output


def test_the_replay_summary_of_an_english_chat_is_written_in_english(tmp_path: Path) -> None:
    """Found by the English QA pass: after replaying an English group the summary listed people's
    facts and name changes in Chinese (住在, 自称「Bobby」, 群名片改为…)."""
    said = [
        ("u1", "Robert", "hey y'all, call me Bobby, nobody says Robert"),
        ("u2", "Liz", "I live in Berlin now, moved last month"),
        ("u1", "Bob (away)", "back from lunch, who's up for the raid tonight?"),
    ]
    log = tmp_path / "log.jsonl"
    lines = [
        {"chat": "en", "message_id": f"m{n}", "sender_id": user, "sender_name": user, "sender_card": card,
         "time": 1772367300 + 60 * n, "text": text}
        for n, (user, card, text) in enumerate(said)
    ]  # fmt: skip
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = CliRunner().invoke(cli, ["replay", str(log), "--data-dir", str(tmp_path / "d"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "· calls themselves “Bobby”" in result.output
    assert "· group card changed to “Bob (away)” (was “Robert”)" in result.output
    assert "lives in: Berlin" in result.output
    assert not regex.search(r"\p{Han}", result.output), result.output


def test_a_database_locked_by_another_process_stops_the_replay_with_one_line(tmp_path: Path) -> None:
    data = tmp_path / "d"
    config = tmp_path / "config.toml"
    config.write_text("[storage]\nbusy_timeout_ms = 200\n", encoding="utf-8")
    options = ["--data-dir", str(data), "--config", str(config), "--no-progress", "--settle-minutes", "0"]
    first = write_log(tmp_path / "first.jsonl")
    assert CliRunner().invoke(cli, ["replay", str(first), *options]).exit_code == 0
    more = tmp_path / "more.jsonl"
    line = {"chat": "g1", "message_id": "later", "sender_id": "u1", "sender_name": "a", "time": 1772367300}
    more.write_text(json.dumps(line | {"text": "后来的消息"}) + "\n", encoding="utf-8")
    with database_locked(data / "qunyi.db"):
        result = CliRunner().invoke(cli, ["replay", str(more), *options])
    assert result.exit_code == 1, result.output
    assert "stayed locked" in result.output and "lines skipped" not in result.output
    assert not isinstance(result.exception, DatabaseLocked)


def test_memory_commands_cli(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl")
    runner = CliRunner()
    data = ["--data-dir", str(tmp_path / "d")]
    assert runner.invoke(cli, ["replay", str(log), "--no-progress", *data]).exit_code == 0
    recalled = runner.invoke(cli, ["recall", "西湖", "--chat", "replay:g1", "--json", *data])
    assert recalled.exit_code == 0, recalled.output
    assert json.loads(recalled.output)["results"][0]["text"] == "好啊，去西湖边那座山"
    who = runner.invoke(cli, ["who", "Lily", "--chat", "g1", "--json", *data])
    assert json.loads(who.output)["matches"][0]["card"] == "莉莉"
    missing = runner.invoke(cli, ["recall", "x", "--chat", "nope", *data])
    assert missing.exit_code == 1 and "no chat" in missing.output


def test_a_forward_replayed_from_the_log_is_recalled_as_a_forward(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    forward = {"chat": "g1", "message_id": "f1", "sender_id": "u3", "sender_name": "Carol", "forwarded": True}
    forward |= {"time": 1772367300, "text": "西湖景区周六封路"}
    write_log(log, [json.dumps(forward, ensure_ascii=False)])
    runner = CliRunner()
    data = ["--data-dir", str(tmp_path / "d")]
    assert runner.invoke(cli, ["replay", str(log), "--no-progress", *data]).exit_code == 0
    recalled = runner.invoke(cli, ["recall", "西湖", "--chat", "replay:g1", "--json", *data])
    assert recalled.exit_code == 0, recalled.output
    results = {r["text"]: r["forwarded"] for r in json.loads(recalled.output)["results"]}
    assert results["西湖景区周六封路"] is True and results["好啊，去西湖边那座山"] is False
    assert [text for text, forwarded in results.items() if forwarded] == ["西湖景区周六封路"]
    text = runner.invoke(cli, ["recall", "西湖", "--chat", "replay:g1", *data]).output.splitlines()
    assert "- [2026-03-01 12:15, forwarded] Carol: 西湖景区周六封路" in text
    assert "- [2026-03-01 12:16] Bob: 好啊，去西湖边那座山" in text


def test_bad_config_stops_cli_with_key_and_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[reply]\nprobability = 3\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["doctor", "--config", str(config), "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 1
    assert "bad.toml:2: reply.probability" in result.output


async def test_a_message_whose_handling_fails_is_reported_and_the_replay_goes_on(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl")
    clock = ManualClock(T0)
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", clock)
    handle = app.pipeline.handle

    async def failing_on_m2(message: ChatMessage, send: Send) -> Outcome:
        if message.message_id == "m2":
            raise RuntimeError("boom")
        return await handle(message, send)

    app.pipeline.handle = failing_on_m2  # type: ignore[method-assign]
    try:
        report = await replay(app, clock, log)
    finally:
        await app.close()
    [problem] = report.problems
    assert problem.kind is IssueKind.FAILED and problem.location == "message m2" and "boom" in problem.reason
    assert report.recorded == 2 and len(report.replies) == 1, "the messages after it were handled"


async def test_a_line_dated_past_the_wall_clock_is_recorded_and_leaves_the_clock_alone(
    tmp_path: Path,
) -> None:
    """A line dated 8999 moved the replay's clock there for the rest of the replay: every later
    message, the bot's answers and the jobs ran in the year 8999."""
    wrong = {**LINES[0], "message_id": "m9", "time": "8999-06-01T00:00:00+00:00", "text": "时钟坏了"}
    log = write_log(tmp_path / "log.jsonl", [json.dumps(wrong, ensure_ascii=False)])
    clock = replay_clock()
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", clock)
    try:
        report = await replay(app, clock, log, settle=timedelta(0))
        async with app.db.read() as session:
            rows = await session.execute(select(Message.platform_message_id, Message.time))
            times = {message_id: time for message_id, time in rows}
    finally:
        await app.close()
    assert report.recorded == 4 and len(report.replies) == 1
    last = datetime.fromtimestamp(LINES[2]["time"], UTC)  # type: ignore[arg-type]
    assert clock.now() == last, "the clock followed the other lines only"
    assert times["m9"] == datetime(8999, 6, 1, tzinfo=UTC).timestamp(), "stored as dated"
    assert times["qunyi-reply-1"] == last.timestamp(), "the answer to m3 is dated at m3"


async def test_a_first_line_past_the_wall_clock_does_not_say_the_clock_stays_in_1970(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The warning named the time of the clock no message had set yet, 1970-01-01, as where the
    replay's clock stays."""
    wrong = {**LINES[0], "message_id": "m9", "time": "8999-06-01T00:00:00+00:00", "text": "时钟坏了"}
    log = tmp_path / "log.jsonl"
    lines = [json.dumps(wrong, ensure_ascii=False), json.dumps(LINES[0], ensure_ascii=False)]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    clock = replay_clock()
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", clock)
    try:
        await replay(app, clock, log, settle=timedelta(0))
    finally:
        await app.close()
    [warning] = [r.getMessage() for r in caplog.records if "past the wall clock" in r.getMessage()]
    assert "1970" not in warning and "clock is left unset" in warning, warning


def test_replay_skips_a_time_past_the_calendar_and_goes_on(tmp_path: Path) -> None:
    future = {**LINES[0], "message_id": "m9", "time": "9999-12-31T23:59:59-08:00"}
    log = write_log(tmp_path / "log.jsonl", [json.dumps(future)])
    result = CliRunner().invoke(cli, ["replay", str(log), "--data-dir", str(tmp_path / "d"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "3 messages recorded" in result.output and "1 lines skipped" in result.output
    assert "out of range" in result.output


def test_replay_prints_chat_names_and_bad_lines_literally(tmp_path: Path) -> None:
    lines = [
        {**LINES[0], "chat": "g7", "chat_name": "摸鱼[/]群"},
        {**LINES[0], "chat": "g8", "chat_name": "[b]技术群[/b] :fire:"},
        {**LINES[1], "message_id": "m8", "mentions": "[/]"},
    ]
    log = write_log(tmp_path / "log.jsonl", [json.dumps(line, ensure_ascii=False) for line in lines])
    result = CliRunner().invoke(cli, ["replay", str(log), "--data-dir", str(tmp_path / "d"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "5 messages recorded" in result.output and "1 lines skipped" in result.output
    assert "摸鱼[/]群 (replay:g7)" in result.output
    assert "[b]技术群[/b] :fire: (replay:g8)" in result.output
    assert "got '[/]'" in result.output


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("--settle-minutes", "-5", "-5 is not in the range 0<=x<=10080"),
        ("--settle-minutes", "99999999999", "is not in the range 0<=x<=10080"),
        ("--platform", " ", "Invalid value for '--platform': must not be empty"),
    ],
)
def test_replay_refuses_odd_options_before_reading_the_log(
    tmp_path: Path, option: str, value: str, error: str
) -> None:
    log = write_log(tmp_path / "log.jsonl")
    data = tmp_path / "d"
    result = CliRunner().invoke(
        cli, ["replay", str(log), "--data-dir", str(data), "--no-progress", option, value]
    )
    assert result.exit_code == 2
    assert error in result.output
    assert not data.exists()


async def test_a_private_chat_is_replayed_as_private_and_a_line_of_the_other_kind_is_skipped(
    tmp_path: Path,
) -> None:
    """Found by QA pass 18: the replay format had no chat kind, so a replayed private chat became a group.
    A chat's kind is kept as the playground keeps it: a line saying the other kind is reported, not
    replayed, and the rest of the log goes on."""
    dm = {"chat": "d1", "sender_id": "u1", "sender_name": "Lily", "time": 1772367300, "chat_kind": "private"}
    log = write_log(
        tmp_path / "log.jsonl",
        [
            json.dumps(dm | {"message_id": "p1", "text": "私聊一句"}),
            json.dumps(dm | {"message_id": "p2", "text": "换成群了", "chat_kind": "group"}),
            json.dumps(LINES[0] | {"message_id": "g9", "chat_kind": "private"}),
            json.dumps(dm | {"message_id": "p3", "text": "频道", "chat_kind": "channel"}),
        ],
    )
    clock = ManualClock(T0)
    app = await build_app(ConfigStore(Settings(), None), tmp_path / "data", clock)
    try:
        report = await replay(app, clock, log)
        private = await app.memory.chat_kind("replay", "d1")
        group = await app.memory.chat_kind("replay", "g1")
        again = log.with_name("again.jsonl")
        again.write_text(json.dumps(LINES[0] | {"message_id": "g10", "chat_kind": "private"}) + "\n")
        later = await replay(app, clock, again)
    finally:
        await app.close()
    assert private is ChatKind.PRIVATE and group is ChatKind.GROUP
    assert [p.location for p in report.problems] == ["message p2", "message g9", "line 5"]
    assert "'d1' is a private chat" in report.problems[0].reason
    assert "'g1' is a group chat" in report.problems[1].reason
    assert "chat_kind must be 'group' or 'private'" in report.problems[2].reason
    assert report.recorded == 4, "the other lines were all replayed"
    assert [p.location for p in later.problems] == ["message g10"], "the kind held in memory counts"
