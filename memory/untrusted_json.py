"""JSON from outside the process (platform frames, export files, request bodies, model answers).

`json.loads` raises `RecursionError`, not a decode error, on input nested deeper than the interpreter's
stack allows (a few kilobytes of `[`), and a plain `ValueError` on an integer of more digits than Python
converts (4300 by default). Callers that handle `json.JSONDecodeError` would let those escape as a crash;
`loads` turns them into a `json.JSONDecodeError` like every other malformed input.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

TOO_DEEP = "nested too deeply"


def too_long_number() -> str:
    """The reason given for an integer longer than Python reads."""
    return f"a number of more than {sys.get_int_max_str_digits()} digits"


def loads(text: str) -> Any:
    """Parse `text` as JSON; raises `json.JSONDecodeError` for malformed or too deeply nested input and
    for an integer too long to read."""
    with _decode_errors(text, 0):
        return json.loads(text)


def loads_unwrapped(text: str) -> Any:
    """`loads`, reading once more a JSON string whose own text is a JSON object: some models send a tool
    call's arguments encoded twice (`"{\\"query\\": \\"火锅\\"}"`), and every call of theirs failed as
    "not a JSON object". A string holding anything else (prose, a list, a string again) stays a string."""
    value = loads(text)
    if not isinstance(value, str):
        return value
    try:
        inner = loads(value)
    except json.JSONDecodeError:
        return value
    return inner if isinstance(inner, dict) else value


def raw_decode(decoder: json.JSONDecoder, text: str, start: int) -> tuple[Any, int]:
    """`decoder.raw_decode(text, start)` with the same treatment of too deeply nested input and too long
    integers."""
    with _decode_errors(text, start):
        return decoder.raw_decode(text, start)


@contextmanager
def _decode_errors(text: str, start: int) -> Iterator[None]:
    """Turn the other errors the json module raises on malformed input into `json.JSONDecodeError`."""
    try:
        yield
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError(TOO_DEEP, text, start) from None
    except ValueError:  # int() refusing a number's digits
        raise json.JSONDecodeError(too_long_number(), text, start) from None
