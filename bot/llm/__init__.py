"""The LLM gateway: per-task models over any OpenAI-compatible endpoint, with budgets and retries."""

from bot.llm.gateway import LLMGateway, TaskReport, build_gateway
from bot.llm.replies import ChatReply, ToolCall
from bot.llm.settings import KNOWN_TASKS, Budget, LLMSettings, ResolvedTask, TaskModel
from bot.llm.usage import TaskUsage, UsageLedger

__all__ = [
    "KNOWN_TASKS",
    "Budget",
    "ChatReply",
    "LLMGateway",
    "LLMSettings",
    "ResolvedTask",
    "TaskModel",
    "TaskReport",
    "TaskUsage",
    "ToolCall",
    "UsageLedger",
    "build_gateway",
]
