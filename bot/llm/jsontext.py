"""Getting the JSON out of a model's answer: bare, in ```json fences, or inside prose."""

from __future__ import annotations

import json
import re
from typing import Any

from memory import untrusted_json
from memory.types import clean_text

# Where reasoning blocks open and close; `_drop_blocks` pairs them in one pass (a `<think>.*?</think>`
# pattern rescans the rest of the answer from every opening tag without a closing one after it: minutes
# for an answer of many `<think>`).
_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
# Reasoning without its other tag: the opening one was part of the prompt (DeepSeek-R1 distills and QwQ
# through Ollama or vLLM answer "…reasoning…</think>answer"), or the answer ran out of tokens before
# the reasoning ended ("<think>…" and nothing else).
_UP_TO_CLOSE = re.compile(r"^.*</think>", re.DOTALL | re.IGNORECASE)
_UNCLOSED = re.compile(r"^\s*<think>.*", re.DOTALL | re.IGNORECASE)
MAX_STARTS = 32
"""How many places an object (and then an array) is tried from, in an answer that is not JSON as a whole."""
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)


class NoJSON(ValueError):
    """The answer holds no parseable JSON object or array."""


def strip_reasoning(text: str) -> str:
    """Drop the reasoning that reasoning models put before their answer: `<think>…</think>` blocks,
    everything up to a `</think>` whose opening tag was in the prompt, and a `<think>` block the
    answer ended in before closing it (which leaves nothing)."""
    text = _drop_blocks(text)
    return _UNCLOSED.sub("", _UP_TO_CLOSE.sub("", text)).strip()


def _drop_blocks(text: str) -> str:
    """`text` without its `<think>…</think>` blocks: each from an opening tag to the first closing tag
    after it; an opening tag no closing one follows, and a closing one nothing opened, are kept."""
    kept: list[str] = []
    done = 0
    opened: int | None = None
    for tag in _TAG.finditer(text):
        if not tag.group(1):
            if opened is None:
                opened = tag.start()
        elif opened is not None:
            kept.append(text[done:opened])
            done, opened = tag.end(), None
    kept.append(text[done:])
    return "".join(kept)


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
    # Objects first: prose such as "see [1]" would otherwise parse as a list. Each try may read to the
    # end of the answer, so only the first few openers are tried: trying every one takes minutes on an
    # answer of many (a truncated list of lists, a long run of `[`), while the loop waits.
    decoder = json.JSONDecoder()
    for opener in ("{", "["):
        start = body.find(opener)
        for _try in range(MAX_STARTS):
            if start == -1:
                break
            try:
                value, _end = untrusted_json.raw_decode(decoder, body, start)
            except json.JSONDecodeError:
                start = body.find(opener, start + 1)
                continue
            return value
    raise NoJSON(
        f"no valid JSON found ({first_error.msg} at line {first_error.lineno} column {first_error.colno})"
    )
