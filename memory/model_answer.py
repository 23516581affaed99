"""The base of the JSON answers memory/ asks a language model for (`LLMPort.complete_json`).

Models answer the right shape with slightly wrong types often enough: an age as the number 25 where
the schema asks for text, a year among the keywords, `null` for a list that is empty. Each such answer
failed validation as a whole, cost a repair request, and lost everything it found when the repaired
answer did it again. A number where text is asked is read as that text, and `null` for a field that
has a default as that default; everything else is still validated as declared.

Text longer than its field allows (a 201-character title where 200 are) is cut to the limit, on a
grapheme boundary and ending in "…", whatever its length: every consumer cuts these texts tighter
still, so what it keeps is the same as if the model had kept to the limit, while a repair round cost a
request, asked the model that had just overrun the limit for the same again, and lost every field of
the answer to the offline path when it overran it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ModelWrapValidatorHandler, ValidationError, model_validator
from pydantic_core import ErrorDetails

from memory.text import truncate

TOO_LONG = "string_too_long"


class ModelAnswer(BaseModel):
    """A model's JSON answer: numbers read as text where text is asked, `null` as a field's default,
    text over its field's max length cut to it."""

    model_config = ConfigDict(coerce_numbers_to_str=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {
            key: value
            for key, value in data.items()
            if value is not None or key not in fields or fields[key].is_required()
        }

    @model_validator(mode="wrap")
    @classmethod
    def _overlong_text_is_cut(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        try:
            return handler(data)
        except ValidationError as exc:
            cut = _cut_overlong(data, exc.errors())
            if cut is data:
                raise
        return handler(cut)


def _cut_overlong(data: Any, errors: Sequence[ErrorDetails]) -> Any:
    """`data` with each text an error says is too long cut to its max length (the containers on its
    way copied, `data` itself left as it was); `data` itself when no error is about a text's length."""
    for error in errors:
        limit = (error.get("ctx") or {}).get("max_length")
        if error["type"] == TOO_LONG and isinstance(error["input"], str) and isinstance(limit, int):
            data = _replaced(data, error["loc"], truncate(error["input"], limit))
    return data


def _replaced(node: Any, loc: Sequence[int | str], value: str) -> Any:
    """A copy of `node` with the item at path `loc` set to `value` (only the containers on the path are
    copied); `node` itself when the path leads nowhere."""
    if not loc:
        return value
    key, rest = loc[0], loc[1:]
    if isinstance(node, dict) and key in node:
        inner = _replaced(node[key], rest, value)
        return node if inner is node[key] else {**node, key: inner}
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        inner = _replaced(node[key], rest, value)
        if inner is node[key]:
            return node
        copied = list(node)
        copied[key] = inner
        return copied
    return node
