"""The [llm] settings: defaults, validation, and how a task's endpoint and key are resolved."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.llm.settings import KNOWN_TASKS, Budget, LLMSettings, TaskModel


def test_defaults_are_off_with_all_five_tasks_and_background_budgets() -> None:
    settings = LLMSettings()
    assert settings.enabled is False
    assert set(KNOWN_TASKS) == {"reply", "topic", "summary", "jargon", "person"}
    assert set(settings.tasks) == set(KNOWN_TASKS)
    for task in ("topic", "summary", "jargon", "person"):
        assert settings.budgets[task] == Budget(tokens_per_hour=200_000, tokens_per_day=1_000_000)
    assert settings.budgets["reply"].tokens_per_hour > 200_000


def test_partial_task_and_budget_tables_keep_defaults_for_the_rest() -> None:
    settings = LLMSettings.model_validate(
        {"tasks": {"jargon": {"model": "small"}}, "budgets": {"jargon": {"tokens_per_hour": 5_000}}}
    )
    assert settings.tasks["jargon"].model == "small"
    assert settings.tasks["reply"] == TaskModel()
    # A budget table replaces the task's caps as a whole: the unset day cap means no cap.
    assert settings.budgets["jargon"] == Budget(tokens_per_hour=5_000, tokens_per_day=None)
    assert settings.budgets["topic"].tokens_per_hour == 200_000


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"tasks": {"reply": {"temperature": 3.0}}}, ("tasks", "reply", "temperature")),
        ({"concurrency": 0}, ("concurrency",)),
        ({"timeout_seconds": 0}, ("timeout_seconds",)),
        ({"budgets": {"topic": {"tokens_per_day": -1}}}, ("budgets", "topic", "tokens_per_day")),
        ({"modle": "typo"}, ("modle",)),
        ({"tasks": {"reply": {"temprature": 0.2}}}, ("tasks", "reply", "temprature")),
        ({"api_key_env": "not a name"}, ("api_key_env",)),
        ({"tasks": {"sumary": {"model": "m"}}}, ("tasks", "sumary", "[key]")),
        ({"budgets": {"jargn": {"tokens_per_hour": 5}}}, ("budgets", "jargn", "[key]")),
    ],
)
def test_invalid_values_are_rejected_with_their_location(data: dict, where: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError) as info:
        LLMSettings.model_validate(data)
    assert tuple(str(part) for part in info.value.errors()[0]["loc"]) == where


def test_resolve_applies_task_overrides_and_key_order() -> None:
    settings = LLMSettings(
        enabled=True,
        base_url="http://global/v1",
        model="big",
        api_key_env="GLOBAL_KEY",
        tasks={"jargon": TaskModel(base_url="http://local/v1", model="small", api_key_env="JARGON_KEY")},
    )
    env = {"GLOBAL_KEY": "g-key", "JARGON_KEY": "j-key"}
    jargon = settings.resolve("jargon", env)
    reply = settings.resolve("reply", env)
    assert jargon is not None and reply is not None
    assert (jargon.base_url, jargon.model, jargon.api_key) == ("http://local/v1", "small", "j-key")
    assert (reply.base_url, reply.model, reply.api_key) == ("http://global/v1", "big", "g-key")
    # A key written in the config wins over the environment.
    with_key = settings.model_copy(update={"api_key": "config-key"})
    assert with_key.resolve("reply", env).api_key == "config-key"  # type: ignore[union-attr]
    assert settings.resolve("unknown", env) is None


def test_keys_never_appear_in_reprs() -> None:
    settings = LLMSettings(api_key="sk-secret", tasks={"reply": TaskModel(api_key="sk-task-secret")})
    resolved = settings.resolve("reply", {})
    assert "sk-secret" not in repr(settings)
    assert "sk-task-secret" not in repr(settings)
    assert "sk-task-secret" not in repr(resolved)
