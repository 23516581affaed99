"""Property tests: any file given to an importer yields messages and issues, or ImportFileError."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from adapters.importers import FORMATS, ImportFileError, ImportIssue, iter_import
from memory.types import ChatMessage
from tests.fuzzing import FIXTURES, fixture_json, json_values, mutated, texts

JSON_FIXTURES = {
    "telegram": ["importers/telegram_result.json", "importers/telegram_full_export.json"],
    "discord": ["importers/discord_export.json"],
    "qq": ["importers/qq_history.json"],
}
QQ_TEXT = (FIXTURES / "importers" / "qq_manager.txt").read_text(encoding="utf-8").splitlines()
REPLAY = [line for line in (FIXTURES / "importers" / "replay.jsonl").read_text("utf-8").splitlines() if line]


def import_bytes(fmt: str, content: bytes, **options: Any) -> list[ChatMessage | ImportIssue]:
    """Everything the importer yields for a file holding `content`; [] when it refuses the whole file."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export"
        path.write_bytes(content)
        try:
            items = list(iter_import(fmt, path, **options))
        except ImportFileError as exc:
            assert str(path) in str(exc)
            return []
    assert all(isinstance(item, ChatMessage | ImportIssue) for item in items)
    return items


def dumped(value: Any) -> bytes:
    """`value` as an export writes it (a lone surrogate as its `\\ud800` escape)."""
    return json.dumps(value).encode("utf-8")


exports = st.sampled_from(sorted(JSON_FIXTURES)).flatmap(
    lambda fmt: st.tuples(
        st.just(fmt),
        st.one_of(json_values, *(mutated(fixture_json(name), 4) for name in JSON_FIXTURES[fmt])),
    )
)


@given(exports)
def test_a_json_export_gives_messages_and_issues_or_import_file_error(case: tuple[str, Any]) -> None:
    fmt, value = case
    import_bytes(fmt, dumped(value), bot_id="999") if fmt != "qq" else import_bytes(fmt, dumped(value))


LONG_NUMBER = b"1" * 5000  # more digits than int() reads


@given(st.sampled_from(sorted(FORMATS)), st.binary(max_size=200))
@example("discord", b'{"messages": [' + LONG_NUMBER + b"]}")
@example("telegram", b'{"messages": [], "n": ' + LONG_NUMBER + b"}")
def test_any_bytes_give_messages_and_issues_or_import_file_error(fmt: str, content: bytes) -> None:
    import_bytes(fmt, content)


@pytest.mark.parametrize("fmt", ["discord", "telegram", "qq"])
def test_an_export_with_an_integer_too_long_to_read_is_refused_as_not_json(fmt: str) -> None:
    """ijson's C parser raised int()'s ValueError, or a SystemError when it met the number in the first
    buffer it read, and the import stopped with a traceback."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export.json"
        path.write_bytes(b'{"channel": {"id": 1}, "messages": [{"id": ' + LONG_NUMBER + b"}]}")
        with pytest.raises(ImportFileError, match="not valid JSON: a number of more than 4300 digits"):
            list(iter_import(fmt, path))


def _lines(original: list[str]) -> st.SearchStrategy[list[str]]:
    """The lines of a real text fixture, some replaced by arbitrary text or cut short, some repeated."""
    whole = st.sampled_from(original)
    line = st.one_of(whole, texts, whole.map(lambda s: s[: len(s) // 2]))
    return st.lists(line, max_size=12)


@given(_lines(QQ_TEXT), st.sampled_from([None, "123456"]))
def test_a_qq_text_export_gives_messages_and_issues_or_import_file_error(
    lines: list[str], chat_id: str | None
) -> None:
    import_bytes("qq", "\n".join(lines).encode("utf-8", "surrogatepass"), chat_id=chat_id)


@given(st.lists(st.one_of(st.sampled_from(REPLAY), json_values.map(json.dumps), texts), max_size=8))
def test_replay_lines_are_messages_or_issues_one_each(lines: list[str]) -> None:
    raw = [line.replace("\n", " ").replace("\r", " ").encode("utf-8", "surrogatepass") for line in lines]
    items = import_bytes("replay", b"\n".join(raw))
    assert len(items) == sum(1 for line in raw if line.strip())


@given(mutated(json.loads(REPLAY[0])))
def test_a_changed_replay_record_is_a_message_or_one_issue(record: Any) -> None:
    assert len(import_bytes("replay", dumped(record))) == 1
