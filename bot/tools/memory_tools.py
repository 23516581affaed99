"""`recall`, `person` and `jargon`: thin tools over the MemoryTools protocol."""

from __future__ import annotations

from pydantic import BaseModel, Field

from bot.tools.registry import MemoryTools, Tool, ToolContext, ToolError

NOTHING = "(nothing found)"


class RecallArgs(BaseModel):
    query: str = Field(min_length=1, max_length=200)
    limit: int = Field(default=5, ge=1, le=10)


class PersonArgs(BaseModel):
    name: str = Field(min_length=1, max_length=64)


class JargonArgs(BaseModel):
    term: str = Field(min_length=1, max_length=32)


def _backend(ctx: ToolContext) -> MemoryTools:
    if ctx.memory is None:
        raise ToolError("memory look-ups are not available here")
    return ctx.memory


async def _recall(ctx: ToolContext, args: RecallArgs) -> str:
    return await _backend(ctx).recall(ctx.chat, args.query, args.limit) or NOTHING


async def _person(ctx: ToolContext, args: PersonArgs) -> str:
    return await _backend(ctx).person(ctx.chat, args.name) or NOTHING


async def _jargon(ctx: ToolContext, args: JargonArgs) -> str:
    return await _backend(ctx).jargon(ctx.chat, args.term) or NOTHING


MEMORY_TOOLS = [
    Tool("recall", "Search this chat's past topics and messages.", RecallArgs, _recall),
    Tool("person", "What is known about a person in this chat, by name or nickname.", PersonArgs, _person),
    Tool("jargon", "Meaning of a slang term used in this chat.", JargonArgs, _jargon),
]
