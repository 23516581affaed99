"""One LLM request's `llm_usage` row before it is written (`Spent`), and its JSON form in the file of
rows the database refused (bot.llm.usage_spill)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

MAX_REQUEST_TOKENS = 2**31 - 1
"""The most tokens one request is counted for: more than any model reads or writes at once. A server
reporting more (10**30, a garbled count) is counted this much, over any cap, instead of a number SQLite
cannot store, which failed the request and then every later write of the ledger, shutdown's too."""

_TYPES: dict[str, tuple[type, ...]] = {
    "task": (str,),
    "model": (str,),
    "prompt_tokens": (int,),
    "completion_tokens": (int,),
    "ok": (bool,),
    "error": (str,),
    "time": (float, int),
    "cancelled": (bool,),
}


@dataclass(frozen=True, slots=True)
class Spent:
    """One request's `llm_usage` row before it is written."""

    task: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    ok: bool
    error: str
    time: float
    cancelled: bool = False

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON object (`from_json` reads it back)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Spent:
        """The row `to_json` wrote; ValueError naming what is wrong when `data` is not one."""
        if not isinstance(data, dict) or set(data) != {f.name for f in fields(cls)}:
            raise ValueError("not an LLM usage row")
        for name, types in _TYPES.items():
            value = data[name]
            # bool is an int: a count given as true is no count
            if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
                raise ValueError(f"{name} is {value!r}")
        if not all(0 <= data[name] <= MAX_REQUEST_TOKENS for name in ("prompt_tokens", "completion_tokens")):
            raise ValueError("a token count out of range")
        if not math.isfinite(data["time"]):
            raise ValueError(f"time is {data['time']!r}")
        return cls(**{**data, "time": float(data["time"])})
