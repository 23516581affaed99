"""Reading config.toml: TOML → environment overrides → validation, with errors naming key and line."""

from __future__ import annotations

import os
import re
import tomllib
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from bot.config.settings import Settings

ENV_PREFIX = "QUNYI__"
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_\-.]+)\s*=""")


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file, line and key."""


def _split_key(raw: str) -> list[str]:
    return [part.strip().strip("\"'") for part in raw.split(".")]


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Map each key path (table path + key) to its 1-based line in the TOML text."""
    lines: dict[tuple[str, ...], int] = {}
    table: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = _split_key(header.group(1))
            lines.setdefault(tuple(table), number)
            continue
        key = _KEY.match(line)
        if key:
            lines.setdefault((*table, *_split_key(key.group(1))), number)
    return lines


def _locate(lines: Mapping[tuple[str, ...], int], loc: tuple[str, ...]) -> int | None:
    for end in range(len(loc), 0, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def _unwrap(annotation: Any) -> Any:
    """`Annotated[X, …]` → X, and `X | None` → X; anything else as it is."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            options = [a for a in get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                return annotation
            annotation = options[0]
        else:
            return annotation


def _setting_type(path: list[str]) -> Any:
    """The type of the setting at `path` (table names then key), or None when no such setting exists."""
    node: Any = Settings
    for part in path:
        node = _unwrap(node)
        if isinstance(node, type) and issubclass(node, BaseModel):
            field = node.model_fields.get(part)
            if field is None:
                return None
            node = field.annotation
        elif get_origin(node) is dict:
            node = get_args(node)[1]
        else:
            return None
    return node


def _is_text(annotation: Any) -> bool:
    """Whether a setting holds a string (a plain, constrained, optional or one-of-these-words string)."""
    annotation = _unwrap(annotation)
    if get_origin(annotation) is Literal:
        return all(isinstance(choice, str) for choice in get_args(annotation))
    return annotation is str


def _env_overrides(env: Mapping[str, str]) -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """QUNYI__LLM__API_KEY=… sets [llm] api_key. A string setting takes the value as written (a numeric
    QQ id or token stays a string); any other parses it as a TOML literal, else keeps the string.
    Returns the tree of values and, per key path set, the variable that set it."""
    tree: dict[str, Any] = {}
    variables: dict[tuple[str, ...], str] = {}
    for name, raw in env.items():
        if not name.startswith(ENV_PREFIX):
            continue
        path = [part.lower() for part in name[len(ENV_PREFIX) :].split("__") if part]
        if not path:
            continue
        value: Any = raw
        if not _is_text(_setting_type(path)):
            try:
                value = tomllib.loads(f"v = {raw}")["v"]
            except tomllib.TOMLDecodeError:
                pass
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
        variables[tuple(path)] = name
    return tree, variables


def _set_by(variables: Mapping[tuple[str, ...], str], loc: tuple[str, ...]) -> str | None:
    """The environment variable that set the value at `loc` (or a table holding it), if one did."""
    for end in range(len(loc), 0, -1):
        if loc[:end] in variables:
            return variables[loc[:end]]
    return None


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def parse_settings(text: str, source: str, env: Mapping[str, str] | None = None) -> Settings:
    """Validate TOML text into Settings; raise ConfigError naming the line and key of each problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from exc
    overrides, variables = _env_overrides(os.environ if env is None else env)
    data = _merge(data, overrides)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        lines = key_lines(text)
        problems = []
        for error in exc.errors():
            loc = tuple(str(part) for part in error["loc"])
            if loc[-1:] == ("[key]",):  # a bad table name, e.g. [llm.tasks.sumary]: name the table
                loc = loc[:-1]
            key = ".".join(loc)
            line = _locate(lines, loc)
            variable = _set_by(variables, loc)
            if variable is not None:  # the file's line (if any) holds a value the variable replaced
                where = f"environment variable {variable}"
            else:
                where = f"{source}:{line}" if line else f"{source} (or a QUNYI__ environment variable)"
            message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
            problems.append(f"{where}: {key}: {message}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems)) from None


def load_settings(path: Path | None, env: Mapping[str, str] | None = None) -> Settings:
    """Load a config file; with no path, the built-in defaults (plus environment overrides). A UTF-8
    byte-order mark (Windows Notepad writes one) is skipped: TOML would refuse the invisible character."""
    if path is None:
        return parse_settings("", "<defaults>", env)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    return parse_settings(_utf8_text(data, path), str(path), env)


def _utf8_text(data: bytes, path: Path) -> str:
    """The file's text; a ConfigError naming the line of the first byte that is not UTF-8, and saying
    which encoding the file was likely saved in (Windows PowerShell's `>` writes UTF-16, an older
    Notepad's "ANSI" on a Chinese system is GBK)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(f"{path}: saved as UTF-16; save it as UTF-8 (TOML files are UTF-8)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = len(data[: exc.start].rsplit(b"\n", 1)[-1]) + 1
        raise ConfigError(
            f"{path}:{line}: byte 0x{data[exc.start]:02x} at column {column} is not UTF-8; save the file "
            "as UTF-8 (it may have been saved as GBK / ANSI)"
        ) from None
