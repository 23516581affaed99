"""The base of the JSON answers memory/ asks a language model for (`LLMPort.complete_json`).

Models answer the right shape with slightly wrong types often enough: an age as the number 25 where
the schema asks for text, a year among the keywords, `null` for a list that is empty. Each such answer
failed validation as a whole, cost a repair request, and lost everything it found when the repaired
answer did it again. A number where text is asked is read as that text, and `null` for a field that
has a default as that default; everything else is still validated as declared.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


class ModelAnswer(BaseModel):
    """A model's JSON answer: numbers read as text where text is asked, `null` as a field's default."""

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
