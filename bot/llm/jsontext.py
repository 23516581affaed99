"""Getting the JSON out of a model's answer: bare, in ```json fences, or inside prose."""

from __future__ import annotations

import json
import re
from typing import Any

from memory import untrusted_json
from memory.types import clean_text

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
# Reasoning without its other tag: the opening one was part of the prompt (DeepSeek-R1 distills and QwQ
# through Ollama or vLLM answer "…reasoning…</think>answer"), or the answer ran out of tokens before
# the reasoning ended ("<think>…" and nothing else).
_UP_TO_CLOSE = re.compile(r"^.*</think>", re.DOTALL | re.IGNORECASE)
_UNCLOSED = re.compile(r"^\s*<think>.*", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)


class NoJSON(ValueError):
    """The answer holds no parseable JSON object or array."""


def strip_reasoning(text: str) -> str:
    """Drop the reasoning that reasoning models put before their answer: `<think>…</think>` blocks,
    everything up to a `</think>` whose opening tag was in the prompt, and a `<think>` block the
    answer ended in before closing it (which leaves nothing)."""
    text = _THINK.sub("", text)
    return _UNCLOSED.sub("", _UP_TO_CLOSE.sub("", text)).strip()


def answer_text(content: str) -> str:
    """A model's answer as text: its reasoning stripped (`strip_reasoning`) and NULs, other control
    characters and lone surrogates dropped, which no chat shows and no database stores (a chat's
    memory keeps its messages cleaned the same way, so what is sent is what is stored)."""
    return clean_text(strip_reasoning(content))


def extract_json(text: str) -> Any:
    """Parse the JSON value in `text`: the whole text, else a fenced block, else the first object or
    array that parses where it starts, its strings cleaned (`_cleaned`). Raises NoJSON with a short
    reason otherwise."""
    return _cleaned(_parse(strip_reasoning(text)))


def _cleaned(value: Any) -> Any:
    """`value` with NULs, other control characters and lone surrogates dropped from every string (keys
    too): JSON escapes can spell them, and no such string can be stored in SQLite or quoted in the next
    request as UTF-8. Cleans the freshly parsed containers in place, without recursion, as they may
    nest as deeply as the parser allows."""
    if isinstance(value, str):
        return clean_text(value)
    stack: list[Any] = [value] if isinstance(value, list | dict) else []
    while stack:
        node = stack.pop()
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        if isinstance(node, dict):
            node.clear()
        for key, item in items:
            if isinstance(item, str):
                item = clean_text(item)
            elif isinstance(item, list | dict):
                stack.append(item)
            node[clean_text(key) if isinstance(key, str) else key] = item
    return value


def _parse(body: str) -> Any:
    """The JSON value `extract_json` finds in `body` (reasoning already stripped)."""
    if not body:
        raise NoJSON("the answer is empty")
    try:
        return untrusted_json.loads(body)
    except json.JSONDecodeError as exc:
        first_error = exc
    for fenced in _FENCE.findall(body):
        try:
            return untrusted_json.loads(fenced.strip())
        except json.JSONDecodeError:
            continue
    # Objects first: prose such as "see [1]" would otherwise parse as a list.
    decoder = json.JSONDecoder()
    for opener in ("{", "["):
        start = body.find(opener)
        while start != -1:
            try:
                value, _end = untrusted_json.raw_decode(decoder, body, start)
            except json.JSONDecodeError:
                start = body.find(opener, start + 1)
                continue
            return value
    raise NoJSON(
        f"no valid JSON found ({first_error.msg} at line {first_error.lineno} column {first_error.colno})"
    )
