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

A list longer than its field allows (31 keywords where 30 are) keeps its first items, up to the limit,
for the same reasons: the model puts what matters first, and a repair round asked for the same list
again, or lost the whole answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ModelWrapValidatorHandler, ValidationError, model_validator
from pydantic_core import ErrorDetails

from memory.text import truncate

TEXT_TOO_LONG = "string_too_long"
LIST_TOO_LONG = "too_long"  # pydantic's error for a list (or tuple, set, dict) over its max_length


class ModelAnswer(BaseModel):
    """A model's JSON answer: numbers read as text where text is asked, `null` as a field's default,
    text and lists over their field's max length cut to it."""

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
    def _overlong_is_cut(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        # A list over its limit hides its items' errors (pydantic reports its length alone), so a text
        # too long in the kept items shows only once the list is cut: cut again until nothing is. Each
        # round shortens something (a round that changes nothing raises), so this ends.
        while True:
            try:
                return handler(data)
            except ValidationError as exc:
                cut = _cut_overlong(data, exc.errors())
                if cut == data:
                    raise
                data = cut


def _cut_overlong(data: Any, errors: Sequence[ErrorDetails]) -> Any:
    """`data` with each text or list an error says is too long cut to its max length (the containers on
    its way copied, `data` itself left as it was); `data` itself when no error is about a length."""
    for error in errors:
        cut = _cutter(error)
        if cut is not None:
            data = _replaced(data, error["loc"], cut)
    return data


def _cutter(error: ErrorDetails) -> Callable[[Any], Any] | None:
    """What cuts the value a validation error says is too long to its max length (text on a grapheme
    boundary, ending in "…"; a list to its first items), or None when the error is not about a length."""
    limit = (error.get("ctx") or {}).get("max_length")
    given = error["input"]
    if not isinstance(limit, int):
        return None
    if error["type"] == TEXT_TOO_LONG and isinstance(given, str):
        # The error's input, not the answer's value: a number read as text is text only there.
        return lambda _value: truncate(given, limit)
    if error["type"] == LIST_TOO_LONG:
        # The answer's value: an earlier cut in this round may have changed the list's items.
        return lambda value: value[:limit] if isinstance(value, list) else value
    return None


def _replaced(node: Any, loc: Sequence[int | str], change: Callable[[Any], Any]) -> Any:
    """A copy of `node` with the item at path `loc` replaced by `change(item)` (only the containers on
    the path are copied); `node` itself when the path leads nowhere or nothing changed."""
    if not loc:
        return change(node)
    key, rest = loc[0], loc[1:]
    if isinstance(node, dict) and key in node:
        inner = _replaced(node[key], rest, change)
        return node if inner is node[key] else {**node, key: inner}
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        inner = _replaced(node[key], rest, change)
        if inner is node[key]:
            return node
        copied = list(node)
        copied[key] = inner
        return copied
    return node
