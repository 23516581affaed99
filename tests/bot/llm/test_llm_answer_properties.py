"""Property tests: whatever a model answers, reading it raises only NoJSON or a ValidationError, the
failures the gateway turns into a repair request and then LLMBadAnswer (the job's offline path)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from bot.llm.jsontext import NoJSON, extract_json
from memory.history.digest import DigestAnswer
from memory.jargon.extract import Extracted
from memory.jargon.inference import Comparison, ContextMeaning, PlainMeaning
from memory.persons.consolidate import PersonFactsAnswer
from memory.recall.rerank import RerankAnswer
from memory.topics.check import TopicAnswer
from tests.fuzzing import json_values, texts

SCHEMAS: list[type[BaseModel]] = [
    RerankAnswer,
    DigestAnswer,
    TopicAnswer,
    PersonFactsAnswer,
    Extracted,
    ContextMeaning,
    PlainMeaning,
    Comparison,
]
answers = st.one_of(
    texts,
    json_values.map(json.dumps),
    st.tuples(texts, json_values.map(json.dumps), texts).map("```json\n".join),
    st.tuples(
        st.sampled_from(["<think>", "</think>", "{", "[", "```"]), texts, json_values.map(json.dumps)
    ).map("".join),
)


def read_answer(text: str, schema: type[BaseModel]) -> BaseModel | None:
    """The answer as the gateway reads it; None for the failures it handles."""
    try:
        return schema.model_validate(extract_json(text))
    except (NoJSON, ValidationError):
        return None


@given(answers, st.sampled_from(SCHEMAS))
@example('{"order": [' + "9" * 5000 + "]}", RerankAnswer)
def test_any_answer_is_a_model_or_a_handled_failure(text: str, schema: type[BaseModel]) -> None:
    parsed = read_answer(text, schema)
    assert parsed is None or isinstance(parsed, schema)


@given(json_values, st.sampled_from(SCHEMAS))
def test_any_json_value_is_a_model_or_a_validation_error(value: Any, schema: type[BaseModel]) -> None:
    assert read_answer(json.dumps(value), schema) is None or isinstance(value, dict | list)
