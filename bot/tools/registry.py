"""A small registry of tools for the reply model's function calling and for the MCP server.

A tool is a name, a one-line description, a pydantic model for its arguments and an async handler
returning text. `ToolRegistry.call` never raises: bad JSON, bad arguments, a write tool in a
read-only context, a handler error and a timeout all come back as a short `error: …` string the
model can act on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from memory import untrusted_json
from memory.notes import InvalidNoteName, NoteError, NoteStore
from memory.storage import DatabaseLocked, DatabaseWriteFailed
from memory.storage.lock_wait import writes_give_up_by
from memory.text import truncate

log = logging.getLogger(__name__)

DEFAULT_TIME_LIMIT = 10.0
MAX_RESULT_CHARS = 4000
# A write in a tool call stops waiting for another process's lock this long before the call's time
# limit (at most a quarter of it), so the call reports the lock rather than running out of time.
LOCK_ERROR_MARGIN = 0.5


class ToolError(Exception):
    """Raised by a handler to hand its message back to the model as `error: <message>`."""


class MemoryTools(Protocol):
    """The memory look-ups behind `recall`, `person` and `jargon`; MemoryService implements it.

    Each returns ready-to-read text for the model (empty when nothing is found), scoped to `chat`.
    """

    async def recall(self, chat: str, query: str, limit: int) -> str:
        """Past topics and messages of the chat that match `query`, best first."""
        ...

    async def person(self, chat: str, name: str) -> str:
        """The card of the person called `name` (or an alias of theirs) in this chat."""
        ...

    async def jargon(self, chat: str, term: str) -> str:
        """The meaning of a group slang term, as known in this chat."""
        ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool call may touch: one chat's memory and notes, and whether it may write.

    `notes_seen` holds, per note name, the version (`memory.notes.version_of`, or `ABSENT`) the calls
    made with this context last read or wrote: `note_set` writes on that version only, so a note
    changed meanwhile by someone else (an admin's edit while the model was thinking) is never
    replaced by text made from the older one. One context serves one reply, or one MCP session."""

    chat: str
    notes: NoteStore
    memory: MemoryTools | None = None
    writable: bool = False
    notes_seen: dict[str, str] = field(default_factory=dict)


Handler = Callable[[ToolContext, Any], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool: `args` validates the call's arguments, `handler(ctx, args)` does the work."""

    name: str
    description: str
    args: type[BaseModel]
    handler: Handler
    writes: bool = False

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments, trimmed to save tokens: no titles and no string length
        bounds (the arguments are still validated against them, with a clear error)."""
        return _compact(self.args.model_json_schema())


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The text handed back to the caller and whether the call succeeded."""

    text: str
    ok: bool


class ToolRegistry:
    """Tools by name. `time_limit` bounds each call in seconds; a database write in a call waits for
    another process's lock only until shortly before it runs out (`[storage] busy_timeout_ms` if that
    comes first), so a locked database is reported as locked, not as a slow call."""

    def __init__(self, tools: list[Tool] | None = None, time_limit: float = DEFAULT_TIME_LIMIT) -> None:
        self.time_limit = time_limit
        self._tools: dict[str, Tool] = {}
        for tool in tools or []:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Register a tool; names are unique."""
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def tools(self, writable: bool = True) -> list[Tool]:
        """The registered tools, write tools left out unless `writable`."""
        return [t for t in self._tools.values() if writable or not t.writes]

    def openai_tools(self, writable: bool = True) -> list[dict[str, Any]]:
        """Compact OpenAI function-calling definitions (`tools=` of a chat completion)."""
        return [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.input_schema()},
            }
            for t in self.tools(writable)
        ]

    async def call(self, name: str, raw_args: str | Mapping[str, Any] | None, ctx: ToolContext) -> str:
        """Run a tool and return its text, or an `error: …` text; never raises."""
        return (await self.call_checked(name, raw_args, ctx)).text

    async def call_checked(
        self, name: str, raw_args: str | Mapping[str, Any] | None, ctx: ToolContext
    ) -> ToolOutcome:
        """Like `call`, also saying whether the call succeeded (the MCP server marks errors)."""
        tool = self._tools.get(name)
        if tool is None:
            offered = ", ".join(t.name for t in self.tools(ctx.writable))
            return _error(f"unknown tool {name!r}; tools: {offered}")
        if tool.writes and not ctx.writable:
            return _error(f"{name} is not allowed here (read-only)")
        try:
            data = (
                untrusted_json.loads_unwrapped(raw_args)
                if isinstance(raw_args, str)
                else dict(raw_args or {})
            )
        except (json.JSONDecodeError, TypeError, ValueError):
            return _error(f"arguments for {name} are not a JSON object")
        if data is None:
            data = {}
        if not isinstance(data, dict):
            return _error(f"arguments for {name} are not a JSON object")
        try:
            args = tool.args.model_validate(data)
        except ValidationError as exc:
            return _error(f"bad arguments for {name}: {_describe(exc)}")
        lock_deadline = time.monotonic() + self.time_limit - min(LOCK_ERROR_MARGIN, self.time_limit / 4)
        try:
            with writes_give_up_by(lock_deadline):
                async with asyncio.timeout(self.time_limit):
                    text = await tool.handler(ctx, args)
        except TimeoutError:
            return _error(f"{name} took longer than {self.time_limit:g}s")
        except (ToolError, InvalidNoteName, NoteError) as exc:
            return _error(str(exc))
        except (DatabaseLocked, DatabaseWriteFailed) as exc:  # a write tool's (or a counting recall's)
            return _error(f"{exc}; nothing was changed: try again")
        except Exception:
            log.exception("tool %s failed in chat %s", name, ctx.chat)
            return _error(f"{name} failed")
        return ToolOutcome(truncate(text, MAX_RESULT_CHARS), ok=True)


def _error(message: str) -> ToolOutcome:
    return ToolOutcome(f"error: {message}", ok=False)


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_context=False, include_input=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


_DROPPED_KEYWORDS = frozenset({"title", "minLength", "maxLength"})


def _compact(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key in _DROPPED_KEYWORDS and not isinstance(value, dict):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {prop: _compact(sub) for prop, sub in value.items()}
            else:
                out[key] = _compact(value)
        return out
    if isinstance(schema, list):
        return [_compact(item) for item in schema]
    return schema
