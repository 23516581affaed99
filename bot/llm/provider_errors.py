"""Reading a provider's error answer: which ones asking again cannot cure, and which setting to change.

OpenAI-compatible providers word the same refusals differently (OpenAI, DeepSeek, DashScope, Moonshot,
Zhipu, SiliconFlow, OpenRouter, local servers, one-api proxies); the markers below are the words and
codes they use, matched in the lowercased error message and body.
"""

from __future__ import annotations

# A spent balance or quota: OpenAI `insufficient_quota` (429), Moonshot `exceeded_current_quota_error`
# (429), DeepSeek "Insufficient Balance" (402), OpenRouter "Insufficient credits" (402), SiliconFlow
# "account balance is insufficient" (403), Zhipu 1113 "您的账户已欠费" (429), DashScope `Arrearage`.
# Not the bare word "quota": DashScope's rate limit is `Throttling.RateQuota`, which does pass.
QUOTA_MARKERS = (
    "insufficient_quota",
    "exceeded_current_quota",
    "insufficient balance",
    "insufficient_balance",
    "balance is insufficient",
    "insufficient credits",
    "arrearage",
    "余额不足",
    "欠费",
)

COMPLETION = "max_completion_tokens"
QUOTA_ADVICE = "the provider's quota or balance is used up: asking again will not help until it is topped up"


def used_up_quota(error: str) -> bool:
    """True when an error (message and body, any case) says the account's quota or balance is spent."""
    lowered = error.lower()
    return any(marker in lowered for marker in QUOTA_MARKERS)


def _names(lowered: str, word: str) -> bool:
    """True when the error names the request field `word` (quoted, or as the rejected `param`)."""
    return any(form in lowered for form in (f"'{word}'", f'"{word}"', f"`{word}`", f"param': '{word}"))


# How servers refuse tools: Ollama "… does not support tools", vLLM "\"auto\" tool choice requires
# --enable-auto-tool-choice", others name the field or "function calling". Not any mention of tools:
# DeepSeek's thinking mode points at its "#tool-calls" guide for a missing reasoning_content.
TOOLS_MARKERS = ("support tool", "tool choice", "function call")


def _refuses_tools(lowered: str) -> bool:
    return any(marker in lowered for marker in TOOLS_MARKERS) or any(
        _names(lowered, field) for field in ("tools", "tool_choice")
    )


def rejects_response_format(status: int, error: str) -> bool:
    """True for a 400/422 refusing JSON mode: `response_format` or `json_object` named, or DeepSeek's
    "deepseek-reasoner does not support Json Output"."""
    if status not in (400, 422):
        return False
    lowered = error.lower()
    return any(
        marker in lowered for marker in ("response_format", "response format", "json_object", "json output")
    )


def advice(task: str, status: int, error: str, *, sent_tools: bool) -> str:
    """The setting an admin changes for an error that asking again cannot cure, or "" when none is
    known: a field the model refuses (`max_tokens`, `temperature`, `tools`), a spent quota, an endpoint
    or key that is wrong."""
    lowered = error.lower()
    table = f"[llm.tasks.{task}]"
    if status == 402 or used_up_quota(lowered):
        return QUOTA_ADVICE
    if status in (400, 422):
        if _names(lowered, "max_tokens") and COMPLETION in lowered:
            return f'this model wants max_completion_tokens: set {table} max_tokens_field = "{COMPLETION}"'
        if _names(lowered, "temperature"):
            return f"this model refuses the temperature sent: set {table} temperature = 1 (or its value)"
        if sent_tools and _refuses_tools(lowered):
            return "this model refuses tools (function calling): set [tools] enabled = false, or use another"
    if status == 404:
        return (
            "nothing answers there: check base_url (OpenAI-compatible endpoints usually end in /v1, "
            f"e.g. https://api.deepseek.com/v1) and the model name of {table} / [llm]"
        )
    if status in (401, 403):
        return "the key was refused: check api_key / api_key_env of [llm] (or of " + table + ")"
    return ""
