"""Property tests: any query a member types goes through the real recall over a real SQLite database
without an error, and the time-expression parser reads any text at any time the messages can have."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memory.clock import ManualClock
from memory.recall.setup import attach_recall
from memory.recall.timeexpr import parse_time_hints
from memory.service import MemoryService
from memory.storage import Database
from memory.storage.fts import match_expression, phrase_expression
from memory.types import EARLIEST_TIME, LATEST_TIME
from tests.conftest import T0, chat_ids, make_message
from tests.fuzzing import texts

FTS_SYNTAX = [
    '"',
    "*",
    "NEAR(",
    "NEAR/2",
    "AND",
    "OR",
    "NOT",
    "-",
    "^",
    ":",
    "body:",
    "{body}",
    "(",
    ")",
    "+",
    " ",
]
WORDS = ["周六", "打本", "小红", "上周三", "10 days ago", "'打本'", "“开黑”", "Caroline"]
queries = st.lists(st.one_of(texts, st.sampled_from(FTS_SYNTAX + WORDS)), max_size=10).map("".join)
CHAT = [
    "周六晚上八点打本？",
    "可以，@小红 记一下",
    "Caroline went to the LGBTQ support group last week",
    '引号 "quoted" 和 星号 * 和 NEAR(a b)',
]


class Recall:
    """A MemoryService with recall over a real SQLite database holding a small chat, on its own loop."""

    def __init__(self, folder: Path, runner: asyncio.Runner) -> None:
        self.runner = runner
        self.db = runner.run(Database.open(folder / "data"))
        self.memory = MemoryService(self.db, ManualClock(T0 + timedelta(days=3)))
        attach_recall(self.memory)
        for n, text in enumerate(CHAT):
            runner.run(self.memory.record(make_message(n, text=text, sender=f"u{n % 2}")))
        self.chat_ids = runner.run(chat_ids(self.memory, "g1"))

    def search(self, query: str) -> None:
        self.runner.run(self.memory.search(self.chat_ids, query))


@pytest.fixture(scope="module")
def recall() -> Iterator[Recall]:
    with tempfile.TemporaryDirectory() as folder, asyncio.Runner() as runner:
        made = Recall(Path(folder), runner)
        yield made
        runner.run(made.db.close())


def test_the_chat_is_found(recall: Recall) -> None:
    hits = recall.runner.run(recall.memory.search(recall.chat_ids, "打本"))
    assert any("打本" in hit.text for hit in hits)


@given(query=queries)
@example(query='"NEAR(周六 打本)" body:* -^')
def test_any_query_is_recalled_without_an_error(recall: Recall, query: str) -> None:
    recall.search(query)


@given(queries, st.sampled_from(["any", "all"]))
def test_a_match_expression_quotes_every_term(query: str, mode: str) -> None:
    for expression in (match_expression(query, mode), phrase_expression(query)):  # type: ignore[arg-type]
        if expression is not None:
            assert expression.startswith('"') and expression.endswith('"')


moments = st.one_of(
    st.datetimes(),
    st.sampled_from(
        [datetime.min, datetime.max, EARLIEST_TIME.replace(tzinfo=None), LATEST_TIME.replace(tzinfo=None)]
    ),
)
zones = st.integers(min_value=-23 * 60, max_value=23 * 60).map(lambda m: timezone(timedelta(minutes=m)))
TIME_WORDS = [
    "上周三",
    "三天前",
    "去年",
    "3000年前",
    "上个月",
    "10 days ago",
    "last week",
    "99999 years ago",
    "十二月三十一日",
    "2月30日",
    "1月",
    "9999年",
]


@given(st.lists(st.one_of(texts, st.sampled_from(TIME_WORDS)), max_size=6).map("".join), moments, zones)
def test_time_expressions_in_any_text_at_any_time(text: str, now: datetime, zone: timezone) -> None:
    for hint in parse_time_hints(text, now.replace(tzinfo=zone)):
        assert hint.start <= hint.end and hint.text in text
