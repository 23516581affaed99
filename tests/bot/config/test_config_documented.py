"""config.toml is the settings' documentation: every setting the config accepts is named there, with
the default and the range its comments state. Loading the file only proves its live keys hold the
defaults; a setting left out, or shown in a commented-out table with a stale value, passed unnoticed."""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from bot.config.settings import Settings

REPO_CONFIG = Path(__file__).resolve().parents[3] / "config.toml"
TABLE = re.compile(r"^#?\s*\[([a-z0-9_.]+)\]\s*$")
KEY = re.compile(r"^(#?)\s*([a-z0-9_]+)\s*=\s*(.*)$")
RANGE = re.compile(r"\((-?[\d.]+)\s*[–-]\s*(-?[\d.]+)\b")
DICT_TABLES = {"llm.tasks": "llm.tasks.reply", "llm.budgets": "llm.budgets.jargon"}
"""A table of tables (one per LLM task) is documented by the example table config.toml shows."""


@dataclass
class Documented:
    """One `key = value` line of config.toml, live or commented out, and the comments above it."""

    value: str
    commented: bool
    comments: list[str] = field(default_factory=list)
    shares_comments: bool = False


def documented_keys(text: str) -> dict[str, Documented]:
    """Every `table.key` config.toml names, with the comment block just above (or beside) it."""
    keys: dict[str, Documented] = {}
    table, previous = "", None
    block: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if (found := TABLE.match(stripped)) is not None:
            table, block, previous = found[1], [], None
        elif (found := KEY.match(stripped)) is not None:
            value, _, beside = found[3].partition(" #")
            entry = Documented(value.strip(), bool(found[1]), [*block, beside.strip()])
            if not any(entry.comments) and previous is not None:
                entry.comments, entry.shares_comments = previous.comments, True
                previous.shares_comments = True
            keys[f"{table}.{found[2]}"] = previous = entry
            block = []
        elif stripped.startswith("#"):
            block.append(stripped.lstrip("# "))
        else:
            block, previous = [], None
    return keys


def settings_fields(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, FieldInfo]]:
    """(`table.key`, field) for every leaf setting under `model`."""
    for name, info in model.model_fields.items():
        dotted = f"{prefix}.{name}" if prefix else name
        nested = [arg for arg in (info.annotation, *get_args(info.annotation)) if _is_model(arg)]
        if nested:
            yield from settings_fields(nested[0], DICT_TABLES.get(dotted, dotted))
        else:
            yield dotted, info


def _is_model(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _rules(info: FieldInfo) -> Iterator[object]:
    """The field's constraints, and its items' for a list of bounded values (`list[StageAge]`)."""
    yield from info.metadata
    for item in get_args(info.annotation):
        for extra in get_args(item)[1:]:
            yield from extra.metadata if isinstance(extra, FieldInfo) else ()


def _bounds(info: FieldInfo) -> tuple[float | None, float | None]:
    """The lowest and highest value a setting takes (pydantic's ge/gt and le/lt), None where unbounded."""
    found: dict[str, float] = {}
    for rule in _rules(info):
        for name in ("ge", "gt", "le", "lt"):
            if (bound := getattr(rule, name, None)) is not None:
                found[name[0]] = float(bound)
    return found.get("g"), found.get("l")


def _toml_value(text: str) -> Any:
    return tomllib.loads(f"value = {text}")["value"]


SETTINGS = dict(settings_fields(Settings, ""))
DOCUMENTED = documented_keys(REPO_CONFIG.read_text(encoding="utf-8"))


def test_every_setting_is_named_in_config_toml() -> None:
    assert len(SETTINGS) > 150
    missing = sorted(set(SETTINGS) - set(DOCUMENTED))
    assert missing == [], "settings the config accepts that config.toml never names"


def test_config_toml_names_no_setting_the_config_refuses() -> None:
    assert sorted(set(DOCUMENTED) - set(SETTINGS)) == []


def test_commented_out_keys_show_their_defaults() -> None:
    """A commented line is what the setting is when left out, except where there is no default (a
    token, an optional address): then the line is an example."""
    wrong = []
    for key, line in DOCUMENTED.items():
        default = SETTINGS[key].get_default(call_default_factory=True)
        if line.commented and default is not None and not SETTINGS[key].is_required():
            shown = _toml_value(line.value)
            if shown != default:
                wrong.append(f"{key}: config.toml shows {shown!r}, the default is {default!r}")
    assert wrong == []


def test_stated_ranges_are_the_ranges_enforced() -> None:
    checked, wrong = 0, []
    for key, line in DOCUMENTED.items():
        stated = [RANGE.search(comment) for comment in line.comments]
        ranges = [found for found in stated if found is not None]
        if line.shares_comments or len(ranges) != 1:
            continue
        low, high = _bounds(SETTINGS[key])
        said = (float(ranges[0][1]), float(ranges[0][2]))
        checked += 1
        if low is None or high is None or not (math.isclose(low, said[0]) and math.isclose(high, said[1])):
            wrong.append(f"{key}: config.toml says {said}, the config enforces {(low, high)}")
    assert checked > 40
    assert wrong == []


README = REPO_CONFIG.parent / "README.md"
NAMED_SETTING = re.compile(r"`\[([a-z0-9_.]+)\] ([a-z0-9_]+)")
"""A setting README names in running text: `[storage] busy_timeout_ms`, `[topics] llm_summary = false`."""


def readme_settings(text: str) -> Iterator[str]:
    """Every `table.key` README names: in running text as `[table] key`, and as the keys of its
    ```toml``` examples (commented-out ones included)."""
    yield from (f"{table}.{key}" for table, key in NAMED_SETTING.findall(text))
    for block in re.findall(r"```toml\n(.*?)```", text, re.S):
        yield from documented_keys(block)


def test_readme_names_only_settings_the_config_accepts() -> None:
    """README's tables and examples are copied into config files: a key they name that the config does
    not accept stops start-up ("unknown key"), and one named wrongly in the text sends a reader looking
    for a setting that is not there."""
    named = list(readme_settings(README.read_text(encoding="utf-8")))
    assert len(named) > 60
    assert sorted(set(named) - set(SETTINGS)) == []
