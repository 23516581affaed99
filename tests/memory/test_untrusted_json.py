"""Input nested too deeply for the JSON parser is malformed input like any other, wherever it arrives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.importers import iter_import
from adapters.importers.base import ImportFileError, ImportIssue
from adapters.importers.replay_jsonl import iter_messages
from bot.llm.jsontext import NoJSON, extract_json
from memory import untrusted_json
from memory.jargon import transfer
from memory.jargon.dictionary import JargonError
from memory.types import ChatMessage

DEEP = "[" * 100_000 + "]" * 100_000


def test_too_deep_input_is_a_decode_error() -> None:
    with pytest.raises(json.JSONDecodeError, match=untrusted_json.TOO_DEEP):
        untrusted_json.loads(DEEP)
    assert untrusted_json.loads('{"a": [1, "群"]}') == {"a": [1, "群"]}


def test_a_deep_replay_line_is_reported_and_the_next_line_kept(tmp_path: Path) -> None:
    good = {
        "chat": "g1",
        "message_id": "m1",
        "sender_id": "u1",
        "sender_name": "阿红",
        "time": 1700000000,
        "text": "还在",
    }
    log = tmp_path / "log.jsonl"
    log.write_text(DEEP + "\n" + json.dumps(good, ensure_ascii=False) + "\n", encoding="utf-8")
    issue, message = list(iter_messages(log))
    assert isinstance(issue, ImportIssue) and issue.location == "line 1"
    assert "nested too deeply" in issue.reason
    assert isinstance(message, ChatMessage) and message.text == "还在"


def test_deep_export_file_jargon_import_and_model_answer_are_clear_errors(tmp_path: Path) -> None:
    export = tmp_path / "export.json"
    export.write_text(DEEP, encoding="utf-8")
    with pytest.raises(ImportFileError, match="nested too deeply"):
        list(iter_import("qq", export))
    with pytest.raises(JargonError, match="invalid JSON"):
        transfer.parse(DEEP, "json")
    # The model's answer is tried from its first few openers only (each try may read to the end): ones
    # nested too deeply make it an answer with no JSON, and nothing escapes as a RecursionError.
    answer = "here you go: " + "[" * 3000 + "1" + "]" * 3000
    with pytest.raises(NoJSON):
        extract_json(answer)


LONG_NUMBER = "1" * 5000  # past the 4300 digits int() reads by default


def test_an_integer_too_long_to_read_is_a_decode_error_not_a_crash() -> None:
    """json.loads raised a plain ValueError: the OneBot frame, the playground post, the QQ dump, the
    jargon import and the model answer all handle only JSONDecodeError."""
    with pytest.raises(json.JSONDecodeError, match="more than 4300 digits"):
        untrusted_json.loads(LONG_NUMBER)
    with pytest.raises(json.JSONDecodeError, match="more than 4300 digits"):
        untrusted_json.raw_decode(json.JSONDecoder(), f'x {{"n": {LONG_NUMBER}}}', 2)
    assert extract_json(f'{{"n": {LONG_NUMBER}}} and then {{"ok": true}}') == {"ok": True}
    with pytest.raises(JargonError, match="invalid JSON"):
        transfer.parse(f"[{LONG_NUMBER}]", "json")
