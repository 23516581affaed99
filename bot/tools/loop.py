"""The reply call with tools: let the model call tools for a bounded number of rounds and time.

The LLM gateway supplies `chat(messages, tools)`, one chat-completion call returning the assistant
message in OpenAI's shape (`content`, optional `tool_calls` with `id` and `function.name/arguments`).
The last call is always made without tools, so the loop ends with a text answer. Each tool result
goes back as a quoted <memory> block, like the reply context: what members said, found by recall or
written into a note, is data to the model, never instructions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.tools.registry import ToolContext, ToolRegistry
from memory.context.render import quote_text

log = logging.getLogger(__name__)

ChatFn = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], Awaitable[dict[str, Any]]]

DEFAULT_MAX_ROUNDS = 3
DEFAULT_TIME_LIMIT = 30.0
MAX_CALLS_PER_ROUND = 4
RESULT_TITLE = "Tool result"


@dataclass(slots=True)
class ToolLoopResult:
    """The final answer, the tool calls made (name, raw arguments), and why tools stopped, if cut."""

    text: str
    calls: list[tuple[str, str]] = field(default_factory=list)
    rounds: int = 0
    cut: str | None = None  # "rounds" or "time" when the model still wanted tools


async def run_with_tools(
    chat: ChatFn,
    messages: Sequence[dict[str, Any]],
    registry: ToolRegistry,
    ctx: ToolContext,
    *,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    time_limit: float = DEFAULT_TIME_LIMIT,
    clock: Callable[[], float] = time.monotonic,
) -> ToolLoopResult:
    """Answer `messages`, letting the model use the registry's tools for at most `max_rounds`
    rounds and `time_limit` seconds; after that it must answer without tools."""
    history = list(messages)
    tools = registry.openai_tools(ctx.writable)
    deadline = clock() + time_limit
    result = ToolLoopResult(text="")
    while True:
        out_of_rounds = result.rounds >= max_rounds
        out_of_time = clock() >= deadline
        offer = None if out_of_rounds or out_of_time else tools
        reply = await chat(history, offer)
        calls = reply.get("tool_calls") or []
        if offer is None or not calls:
            result.text = reply.get("content") or ""
            if calls:
                result.cut = "rounds" if out_of_rounds else "time"
                if not result.text.strip():
                    log.warning(
                        "the reply model still asked for tools after %d rounds (%s limit) and gave no answer",
                        result.rounds,
                        result.cut,
                    )
            return result
        result.rounds += 1
        # The reply as it came (a thinking model's `reasoning_content` too), with the calls it made.
        history.append({**reply, "role": "assistant", "tool_calls": calls})
        for index, call in enumerate(calls):
            function = call.get("function") or {}
            name, raw = str(function.get("name", "")), function.get("arguments") or "{}"
            if index >= MAX_CALLS_PER_ROUND:
                text = f"error: at most {MAX_CALLS_PER_ROUND} tool calls per round"
            else:
                text = await registry.call(name, raw, ctx)
                result.calls.append((name, raw if isinstance(raw, str) else str(raw)))
            content = quote_text("tool", RESULT_TITLE, text)
            history.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": content})
