"""The `[llm]` table of config.toml: endpoint, per-task models, retries, concurrency and budgets.

Everything is optional and the LLM is off by default; Qunyi runs fully without a model endpoint.
A per-task table (`[llm.tasks.jargon]`) overrides the global endpoint and model for that task.
A budget table (`[llm.budgets.jargon]`) replaces that task's default caps as a whole: a cap left out
of the table means "no cap" for that window. Tasks without a table keep the defaults below.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from memory.secret_text import without_secret

KNOWN_TASKS: tuple[str, ...] = ("reply", "topic", "summary", "jargon", "person")
"""The tasks Qunyi's code asks the LLM for; each has default settings and budgets."""

DEFAULT_API_KEY_ENV = "QUNYI_LLM_API_KEY"


def _known_task(name: str) -> str:
    if name not in KNOWN_TASKS:
        raise PydanticCustomError(
            "unknown_task", "unknown task (the tasks are {known})", {"known": ", ".join(KNOWN_TASKS)}
        )
    return name


TaskName = Annotated[str, AfterValidator(_known_task)]
"""A `[llm.tasks.<name>]` or `[llm.budgets.<name>]` table name: one of KNOWN_TASKS (a typo is an error)."""
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class TaskModel(BaseModel):
    """Model settings for one task; unset endpoint fields fall back to the global `[llm]` ones."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    api_key_env: EnvName | None = None
    model: str | None = None
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    max_tokens: int = Field(default=1024, ge=1, le=200_000)
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """The request field carrying `max_tokens`: OpenAI's reasoning models (o1, o3, gpt-5…) refuse
    `max_tokens` and want `max_completion_tokens`, which many other servers do not know."""
    timeout_seconds: float | None = Field(default=None, gt=0, le=3600)
    json_mode: bool = True
    """Send `response_format={"type": "json_object"}` for JSON answers. Servers that reject it with a
    400 are detected and asked again without it, so this only needs turning off to save that round."""


class Budget(BaseModel):
    """Token caps (prompt + completion) over a rolling hour and a rolling day; None = no cap."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens_per_hour: int | None = Field(default=None, ge=0)
    tokens_per_day: int | None = Field(default=None, ge=0)


def _default_tasks() -> dict[str, TaskModel]:
    return {task: TaskModel() for task in KNOWN_TASKS}


_BACKGROUND_BUDGET = {"tokens_per_hour": 200_000, "tokens_per_day": 1_000_000}


def _default_budgets() -> dict[str, Budget]:
    budgets = {task: Budget(**_BACKGROUND_BUDGET) for task in KNOWN_TASKS}
    # Replies are user-facing and bounded by chat traffic; they get a looser safety net only.
    budgets["reply"] = Budget(tokens_per_hour=1_000_000, tokens_per_day=5_000_000)
    return budgets


@dataclass(frozen=True)
class ResolvedTask:
    """The effective settings for one task after applying overrides and environment variables."""

    task: str
    base_url: str
    api_key: str
    model: str
    temperature: float
    max_tokens: int
    max_tokens_field: str
    timeout_seconds: float
    json_mode: bool

    def without_key(self, text: str) -> str:
        """`text` (an error the provider or the client gave) with this task's API key masked."""
        return without_secret(text, self.api_key)

    def __repr__(self) -> str:
        # Never show the key in logs or tracebacks.
        return (
            f"ResolvedTask(task={self.task!r}, base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key={'set' if self.api_key else 'empty'})"
        )


class LLMSettings(BaseModel):
    """The `[llm]` table. `enabled = false` (the default) turns every LLM step into its offline path."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    base_url: str = ""
    api_key: str = Field(default="", repr=False)
    api_key_env: EnvName = DEFAULT_API_KEY_ENV
    model: str = ""
    timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    max_retries: int = Field(default=2, ge=0, le=10)
    backoff_seconds: float = Field(default=1.0, ge=0, le=60)
    max_backoff_seconds: float = Field(default=30.0, ge=0, le=600)
    """Upper bound on one wait between retries, including a server's Retry-After."""
    concurrency: int = Field(default=4, ge=1, le=64)
    budget_recheck_seconds: float = Field(default=60.0, ge=0, le=3600)
    """How long `available()` trusts a cached "over budget" verdict before letting a call re-check."""
    tasks: dict[TaskName, TaskModel] = Field(default_factory=_default_tasks)
    budgets: dict[TaskName, Budget] = Field(default_factory=_default_budgets)

    @model_validator(mode="after")
    def _fill_defaults(self) -> LLMSettings:
        """Tasks and budgets the user did not mention keep their defaults."""
        for task, model in _default_tasks().items():
            self.tasks.setdefault(task, model)
        for task, budget in _default_budgets().items():
            self.budgets.setdefault(task, budget)
        return self

    def resolve(self, task: str, environ: Mapping[str, str] | None = None) -> ResolvedTask | None:
        """Effective settings for `task`, or None when the task has no `[llm.tasks.<task>]` entry.

        The API key comes from, in order: the task's `api_key`, the variable named by the task's
        `api_key_env`, the global `api_key`, the variable named by the global `api_key_env`.
        """
        spec = self.tasks.get(task)
        if spec is None:
            return None
        env = os.environ if environ is None else environ
        api_key = (
            spec.api_key
            or (env.get(spec.api_key_env, "") if spec.api_key_env else "")
            or self.api_key
            or env.get(self.api_key_env, "")
        )
        return ResolvedTask(
            task=task,
            base_url=(spec.base_url or self.base_url).strip(),
            api_key=api_key.strip(),
            model=(spec.model or self.model).strip(),
            temperature=spec.temperature,
            max_tokens=spec.max_tokens,
            max_tokens_field=spec.max_tokens_field,
            timeout_seconds=spec.timeout_seconds or self.timeout_seconds,
            json_mode=spec.json_mode,
        )
