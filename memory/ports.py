"""The small interfaces memory/ needs from the outside: a language model and an embedder."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

Model = TypeVar("Model", bound=BaseModel)


class LLMUnavailable(Exception):
    """The LLM step cannot run now: disabled, over budget, or failed after retries.

    Every caller catches it and takes its offline path; `reason` says why for logs and doctor.
    """

    def __init__(self, task: str, reason: str) -> None:
        super().__init__(f"LLM for task {task!r} unavailable: {reason}")
        self.task = task
        self.reason = reason


class LLMBadAnswer(LLMUnavailable):
    """The model answered this request, but not usably (no valid JSON even after a repair, an empty
    answer). Asking again about the same thing is unlikely to help; other requests may well work."""


class LLMRefused(LLMUnavailable):
    """The endpoint refused this request without retrying it (an HTTP 4xx such as 400 for content
    it will not process, or 401 for a wrong key; or a 200 with no answer in it, as a content filter
    sends). It may be this request's content, refused again whenever it is asked, or the set-up,
    refusing every request alike."""


class LLMPort(Protocol):
    """What memory/ asks of a language model. Tasks: reply, topic, summary, jargon, person."""

    def available(self, task: str) -> bool:
        """True when the task has a model configured and is under its budgets."""
        ...

    def configured(self, task: str) -> bool:
        """True when the task has a model configured, over its budgets or not, unless one of them is 0
        (the task is kept offline for good)."""
        ...

    async def complete_json(
        self, task: str, messages: Sequence[dict[str, Any]], schema: type[Model]
    ) -> Model:
        """Ask for a JSON answer validated against `schema` (one repair round); raises LLMUnavailable."""
        ...

    async def complete_text(self, task: str, messages: Sequence[dict[str, Any]]) -> str:
        """Ask for a plain-text answer; raises LLMUnavailable."""
        ...


class Embedder(Protocol):
    """Turns texts into vectors. `model` names the model so stored vectors can be matched to it;
    `dimension` is the size of its vectors, 0 until it knows (before its first use)."""

    model: str
    dimension: int

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...
