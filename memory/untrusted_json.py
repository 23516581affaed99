"""JSON from outside the process (platform frames, export files, request bodies, model answers).

`json.loads` raises `RecursionError`, not a decode error, on input nested deeper than the interpreter's
stack allows (a few kilobytes of `[`). Callers that handle `json.JSONDecodeError` would let that escape
as a crash; `loads` turns it into a `json.JSONDecodeError` like every other malformed input.
"""

from __future__ import annotations

import json
from typing import Any

TOO_DEEP = "nested too deeply"


def loads(text: str) -> Any:
    """Parse `text` as JSON; raises `json.JSONDecodeError` for malformed or too deeply nested input."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(TOO_DEEP, text, 0) from None


def raw_decode(decoder: json.JSONDecoder, text: str, start: int) -> tuple[Any, int]:
    """`decoder.raw_decode(text, start)` with the same treatment of too deeply nested input."""
    try:
        return decoder.raw_decode(text, start)
    except RecursionError:
        raise json.JSONDecodeError(TOO_DEEP, text, start) from None
