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

    def as_message(self) -> dict[str, Any]:
        """The OpenAI-format assistant message to append to the conversation before tool results."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
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
