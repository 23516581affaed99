"""What `LLMGateway.chat` returns: the assistant's text and tool calls, ready for a tool loop."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memory import untrusted_json


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; `arguments` is the JSON text exactly as sent."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict (also when encoded twice, `untrusted_json.loads_unwrapped`); raises
        ValueError when the model sent something else."""
        try:
            value = untrusted_json.loads_unwrapped(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"tool call {self.name!r} has invalid JSON arguments: {exc.msg}") from exc
        if not isinstance(value, dict):
            raise ValueError(f"tool call {self.name!r} arguments are not a JSON object")
        return value


@dataclass(frozen=True)
class ChatReply:
    """The assistant message of one chat completion (reasoning blocks removed from `content`)."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    model: str = ""
    reasoning: str | None = None
    """The message's `reasoning_content` (DeepSeek's thinking mode), given back with its tool calls."""

    def as_message(self) -> dict[str, Any]:
        """The OpenAI-format assistant message to append to the conversation before tool results. With
        tool calls it keeps the model's `reasoning_content`: DeepSeek's thinking mode refuses (HTTP 400,
        "Missing `reasoning_content` field") a tool round without it."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls and self.reasoning is not None:
            message["reasoning_content"] = self.reasoning
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return message
