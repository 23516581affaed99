"""The hand-written sample log and the synthetic log generator both follow the chat-log contract."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest

from bot import samplegen

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SAMPLE_LOG = SAMPLES / "group_chat.jsonl"
ISO_WITH_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$")
REQUIRED = ("chat", "message_id", "sender_id", "sender_name", "time", "text")
OPTIONAL_STR = ("chat_name", "sender_card", "reply_to")


def load_generator() -> ModuleType:
    """The generator behind samples/generate_log.py."""
    return samplegen


def validate_log(lines: list[str]) -> list[dict[str, object]]:
    """Check every line against the contract; return the parsed messages.

    Per chat: times non-decreasing, message ids unique, reply_to names an earlier message of the
    same chat, mentions name someone who speaks in that chat."""
    rows: list[dict[str, object]] = []
    for number, line in enumerate(lines, 1):
        where = f"line {number}"
        row = json.loads(line)
        assert isinstance(row, dict), where
        # the exact writer form: UTF-8 kept as is, not \\u escapes
        assert json.dumps(row, ensure_ascii=False) == line, f"{where}: not written with ensure_ascii=False"
        for key in REQUIRED:
            assert isinstance(row.get(key), str), f"{where}: {key} missing or not a string"
        for key in ("chat", "message_id", "sender_id", "time"):
            assert str(row[key]).strip(), f"{where}: {key} is empty"
        for key in OPTIONAL_STR:
            assert key not in row or isinstance(row[key], str), f"{where}: {key} is not a string"
        if "mentions" in row:
            mentions = row["mentions"]
            assert isinstance(mentions, list) and mentions, f"{where}: mentions must be a non-empty list"
            assert all(isinstance(m, str) for m in mentions), f"{where}: mentions must be strings"
            assert str(row["text"]).count("@") >= len(mentions), f"{where}: a mention without @name in text"
        assert set(row) <= {*REQUIRED, *OPTIONAL_STR, "mentions"}, f"{where}: unknown keys {set(row)}"
        assert ISO_WITH_OFFSET.match(str(row["time"])), f"{where}: time {row['time']!r} lacks an offset"
        assert datetime.fromisoformat(str(row["time"])).tzinfo is not None, where
        rows.append(row)

    by_chat: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        by_chat.setdefault(str(row["chat"]), []).append(row)
    for chat, messages in by_chat.items():
        speakers = {m["sender_id"] for m in messages}
        seen: set[object] = set()
        last = None
        for message in messages:
            when = datetime.fromisoformat(str(message["time"]))
            assert last is None or when >= last, f"{chat}/{message['message_id']}: time goes backwards"
            last = when
            assert message["message_id"] not in seen, f"{chat}/{message['message_id']}: duplicate id"
            if "reply_to" in message:
                assert message["reply_to"] in seen, f"{chat}/{message['message_id']}: reply_to not earlier"
            for mentioned in message.get("mentions", []):  # type: ignore[union-attr]
                assert mentioned in speakers, f"{chat}/{message['message_id']}: unknown mention {mentioned}"
            seen.add(message["message_id"])
    return rows


@pytest.fixture(scope="module")
def sample() -> list[dict[str, object]]:
    raw = SAMPLE_LOG.read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf"), "sample must not start with a BOM"
    return validate_log(raw.decode("utf-8").splitlines())


def test_sample_follows_the_contract(sample: list[dict[str, object]]) -> None:
    chats = Counter(str(row["chat"]) for row in sample)
    assert 350 <= len(sample) <= 470
    assert set(chats) == {"g1", "g2"}
    assert 30 <= chats["g2"] <= 50
    for row in sample:
        assert datetime.fromisoformat(str(row["time"])).utcoffset() == timedelta(hours=8)


def test_sample_ids_are_numbered_in_time_order(sample: list[dict[str, object]]) -> None:
    for chat, prefix in (("g1", "m"), ("g2", "n")):
        ids = [row["message_id"] for row in sample if row["chat"] == chat]
        assert ids == [f"{prefix}{i}" for i in range(1, len(ids) + 1)]


def test_sample_has_the_people_and_cases_the_readme_describes(sample: list[dict[str, object]]) -> None:
    g1 = [row for row in sample if row["chat"] == "g1"]
    g2 = [row for row in sample if row["chat"] == "g2"]
    g1_speakers = {row["sender_id"] for row in g1}
    assert {"u1", "u2", "u3", "u4", "u5", "u6", "u7", "bot"} == g1_speakers
    assert g1_speakers & {row["sender_id"] for row in g2} == {"u7"}
    assert {row.get("sender_card") for row in g1 if row["sender_id"] == "u3"} == {"浩子｜运维", "浩子｜SRE"}
    assert 4 <= sum(row["sender_id"] == "bot" for row in g1) <= 8
    texts = [str(row["text"]) for row in g1]
    assert any("以后叫我老赵就行" in t for t in texts)
    assert any('小明说"我最讨厌香菜"' in t for t in texts)
    assert not any("新加坡" in t or "芒果" in t for t in texts), "the g2-only facts must not appear in g1"


@pytest.mark.parametrize("term", ["开炉", "船长", "下饺子", "老地方"])
def test_sample_jargon_is_used_often_enough_to_be_mined(sample: list[dict[str, object]], term: str) -> None:
    uses = [row for row in sample if row["chat"] == "g1" and term in str(row["text"])]
    assert len(uses) >= 5
    assert len({row["sender_id"] for row in uses}) >= 3


def test_generator_produces_the_requested_count_of_valid_lines() -> None:
    generator = load_generator()
    rows = generator.generate(1500, 3, seed=7)
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    parsed = validate_log(lines)
    assert len(parsed) == 1500
    chats = Counter(str(row["chat"]) for row in parsed)
    assert set(chats) == {"g1", "g2", "g3"}
    assert all(count > 100 for count in chats.values())
    assert sum("reply_to" in row for row in parsed) > 50
    assert sum("mentions" in row for row in parsed) > 30
    days = {str(row["time"])[:10] for row in parsed}
    assert len(days) >= 14, "times should advance over weeks"


@pytest.mark.parametrize(("messages", "chats"), [(0, 1), (1, 1), (37, 4), (200, 12)])
def test_generator_exact_counts_for_small_and_odd_sizes(messages: int, chats: int) -> None:
    rows = load_generator().generate(messages, chats, seed=3)
    assert len(validate_log([json.dumps(r, ensure_ascii=False) for r in rows])) == messages


def test_generator_is_deterministic_for_a_seed() -> None:
    generator = load_generator()
    assert generator.generate(800, 3, seed=11) == generator.generate(800, 3, seed=11)
    assert generator.generate(800, 3, seed=11) != generator.generate(800, 3, seed=12)


def test_generator_cli_writes_the_file(tmp_path: Path) -> None:
    generator = load_generator()
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out in (first, second):
        assert generator.main(["--messages", "300", "--chats", "2", "--seed", "5", "--out", str(out)]) == 0
    assert first.read_bytes() == second.read_bytes()
    lines = first.read_text(encoding="utf-8").splitlines()
    assert len(validate_log(lines)) == 300


def test_generator_builds_logs_with_more_chats_than_it_has_distinct_names(tmp_path: Path) -> None:
    """Each chat needs six people and there are only 320 surname–given-name pairs: from 54 chats on,
    the generator used to draw names for ever (`qunyi bench --chats 60` hung without a word)."""
    out = tmp_path / "many.jsonl"
    argv = ["--messages", "240", "--chats", "60", "--seed", "7", "--out", str(out)]
    script = SAMPLES / "generate_log.py"
    finished = subprocess.run([sys.executable, str(script), *argv], timeout=60, capture_output=True)
    assert finished.returncode == 0, finished.stderr
    rows = validate_log(out.read_text(encoding="utf-8").splitlines())
    assert len(rows) == 240
    assert len({str(row["chat"]) for row in rows}) == 60


@pytest.mark.parametrize("argv", [["--chats", "0"], ["--messages", "-1"], ["--start", "not-a-date"]])
def test_generator_cli_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        load_generator().main(argv)
    assert exit_info.value.code == 2
