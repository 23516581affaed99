"""The LLM gateway: one place where Qunyi talks to any OpenAI-compatible endpoint.

Per task it picks the model, enforces token budgets, limits concurrency, retries transient failures
with backoff, validates JSON answers against a pydantic schema (one repair round), and records the
tokens of every request. Every failure surfaces as `LLMUnavailable`, so callers take their offline
path. It implements `memory.ports.LLMPort`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypedDict, TypeVar

import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ValidationError

from bot.llm import provider_errors
from bot.llm.jsontext import NoJSON, answer_text, extract_json
from bot.llm.replies import ChatReply, ToolCall
from bot.llm.retry import backoff_delay, is_retryable_status, retry_after_seconds
from bot.llm.settings import LLMSettings, ResolvedTask
from bot.llm.usage import CANCELLED, TaskUsage, UsageLedger
from memory.clock import Clock
from memory.ports import LLMBadAnswer, LLMRefused, LLMUnavailable
from memory.storage.database import Database
from memory.text import estimate_tokens, truncate

log = logging.getLogger(__name__)

Model = TypeVar("Model", bound=BaseModel)
Parsed = TypeVar("Parsed")

_NO_KEY = "not-needed"  # the client insists on a key; local servers (Ollama, vLLM) ignore it
_ERROR_CHARS = 600
_ECHO_CHARS = 4000

SCHEMA_INSTRUCTION = (
    "Answer with one JSON value only (no prose, no code fences) that validates against this "
    "JSON Schema:\n{schema}"
)
REPAIR_INSTRUCTION = (
    "Your previous answer could not be used: {error}\n"
    "Reply again with only the corrected JSON, nothing else. It must validate against this "
    "JSON Schema:\n{schema}"
)


class TaskReport(TypedDict):
    """One task's state for `qunyi doctor`."""

    model: str
    base_url: str
    unavailable_reason: str | None
    usage: TaskUsage | None


class BadAnswer(ValueError):
    """The server answered, but the answer is unusable (no JSON, wrong shape, empty)."""


class _ToolFunction(BaseModel):
    name: str
    arguments: Any = None  # JSON text; some servers send the object itself (`_arguments_text`)


class _ToolCallShape(BaseModel):
    id: str | None = None
    function: _ToolFunction | None = None


class _MessageShape(BaseModel):
    content: str | None = None
    tool_calls: list[_ToolCallShape] | None = None


class _ChoiceShape(BaseModel):
    message: _MessageShape
    finish_reason: str | None = None


class _UsageShape(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None


class _CompletionShape(BaseModel):
    """The parts of a chat completion the gateway reads (the `openai` client does not validate)."""

    choices: list[_ChoiceShape]
    model: str | None = None
    usage: _UsageShape | None = None


def _malformed(response: object) -> str | None:
    """Why a 200 body cannot be read as a chat completion (an HTML page from a proxy, `{}`, a
    choice without a message, usage that is not a number…), or None when it can."""
    if not isinstance(response, ChatCompletion):
        return f"the body is not a chat completion: {truncate(repr(response), 120)}"
    try:
        _CompletionShape.model_validate(response.model_dump(warnings=False))
    except ValidationError as exc:
        return "the body is not a chat completion (" + _describe_validation(exc) + ")"
    return None


def _text_of(content: Any) -> str:
    """Text of a message `content`: a string, or the text parts of a multimodal list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _estimate_prompt(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None) -> int:
    total = sum(estimate_tokens(_text_of(message.get("content"))) + 4 for message in messages)
    if tools:
        total += estimate_tokens(json.dumps(list(tools), ensure_ascii=False))
    return total


def _estimate_completion(response: ChatCompletion) -> int:
    """The completion's tokens as estimated from its text: the answer, a thinking model's
    `reasoning_content` (charged as completion) and the tool calls."""
    total = 0
    for choice in response.choices:
        total += estimate_tokens(choice.message.content or "")
        reasoning = (choice.message.model_extra or {}).get("reasoning_content")
        total += estimate_tokens(reasoning) if isinstance(reasoning, str) else 0
        for call in choice.message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is not None:
                total += estimate_tokens(function.name + _arguments_text(function.arguments))
    return total


def _arguments_text(arguments: Any) -> str:
    """A tool call's arguments as the JSON text OpenAI sends: a server sending the object itself had the
    whole reply refused as no chat completion, and would have had it sent back as an object, which
    strict endpoints refuse."""
    if arguments is None or isinstance(arguments, str):
        return arguments or ""
    return json.dumps(arguments, ensure_ascii=False)


def _describe_validation(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(item) for item in error["loc"]) or "(root)"
        parts.append(f"{where}: {error['msg']}")
    return "schema mismatch: " + "; ".join(parts)


def _first_message(response: ChatCompletion) -> Any:
    """The first choice's message (`_attempts` refuses a completion without choices before parsing)."""
    return response.choices[0].message


NO_ANSWER = "the provider returned no answer (content filter?)"
FILTER_STOP = "content_filter"  # the finish_reason of a choice a content filter stopped


def _filtered_categories(verdicts: Any) -> list[str]:
    """The categories an Azure-style `content_filter_results` object marks as filtered."""
    if not isinstance(verdicts, dict):
        return []
    return [
        str(category)
        for category, verdict in verdicts.items()
        if isinstance(verdict, dict) and verdict.get("filtered") is True
    ]


def _stopped_by_filter(response: ChatCompletion) -> bool:
    """True when a content filter stopped the first choice (finish_reason "content_filter")."""
    return bool(response.choices) and response.choices[0].finish_reason == FILTER_STOP


def _whole(response: ChatCompletion) -> None:
    """Refuses a text or chat answer a content filter stopped: unlike JSON, which shows by validating
    that it is whole, text stops mid-sentence, and a reply would be sent to the chat half-said."""
    if _stopped_by_filter(response):
        raise BadAnswer("the text stops where the filter stopped it")


def _emptied(response: ChatCompletion) -> bool:
    """True when a content filter left no answer: no choices (the prompt was filtered), or a first
    choice it stopped with neither text nor tool calls in it (the answer was filtered)."""
    if not response.choices:
        return True
    message = response.choices[0].message
    return _stopped_by_filter(response) and not (message.content or "").strip() and not message.tool_calls


def _no_answer(response: ChatCompletion, unusable: str = "") -> str:
    """Why a completion a content filter acted on was refused: `NO_ANSWER`; for a choice it stopped,
    the finish reason (and `unusable`, why what it kept cannot be used); then the categories the
    provider marks as filtered (Azure OpenAI and its imitators: `prompt_filter_results` for the prompt,
    the choice's `content_filter_results` for the answer), when it sends them."""
    if response.choices:
        said = f"{NO_ANSWER}: finish_reason {FILTER_STOP}" + (f" ({unusable})" if unusable else "")
        what = "the answer"
        filtered = _filtered_categories((response.choices[0].model_extra or {}).get("content_filter_results"))
    else:
        said, what, filtered = NO_ANSWER, "the prompt", []
        results = (response.model_extra or {}).get("prompt_filter_results")
        for result in results if isinstance(results, list) else []:
            verdicts = result.get("content_filter_results") if isinstance(result, dict) else None
            filtered += [category for category in _filtered_categories(verdicts) if category not in filtered]
    if not filtered:
        return truncate(said, _ERROR_CHARS)
    return truncate(f"{said}: {what} was filtered for {', '.join(filtered)}", _ERROR_CHARS)


def _model_refusal(response: ChatCompletion) -> str | None:
    """Why the model declined, when its first choice holds a `refusal` (OpenAI's safety refusal, with
    `content` null) and neither text nor tool calls: asking again, or for a repair, gets the same."""
    message = response.choices[0].message
    refusal = getattr(message, "refusal", None)
    if (
        not isinstance(refusal, str)
        or not refusal.strip()
        or (message.content or "").strip()
        or message.tool_calls
    ):
        return None
    return truncate(f"the model refused: {refusal.strip()}", _ERROR_CHARS)


def _call_ids(sent: Sequence[str | None]) -> list[str]:
    """The ids of a reply's tool calls, each non-empty and unique in the reply: a server that leaves
    them out (or repeats one) would have them sent back as `null` and the tool results matched to no
    call, or to the wrong one, which strict endpoints refuse (HTTP 400), leaving the message unanswered.
    A server's own id is kept where it can be."""
    taken = {call_id for call_id in sent if call_id}
    ids: list[str] = []
    for n, call_id in enumerate(sent):
        if not call_id or call_id in ids:
            call_id = f"call_{n}"
            while call_id in taken:
                call_id += "_"
            taken.add(call_id)
        ids.append(call_id)
    return ids


def _error_text(exc: openai.APIStatusError) -> str:
    """An error answer's message and body, as the markers of `bot.llm.provider_errors` are matched in."""
    return f"{exc.message} {exc.body}"


def _with_schema(messages: Sequence[Mapping[str, Any]], schema_text: str) -> list[dict[str, Any]]:
    """A copy of `messages` whose system prompt ends with the schema instruction.

    Also makes sure the word "JSON" is present, which OpenAI requires for json_object mode.
    """
    instruction = SCHEMA_INSTRUCTION.format(schema=schema_text)
    copied = [dict(message) for message in messages]
    if copied and copied[0].get("role") == "system" and isinstance(copied[0].get("content"), str):
        copied[0]["content"] = f"{copied[0]['content']}\n\n{instruction}"
    else:
        copied.insert(0, {"role": "system", "content": instruction})
    return copied


class LLMGateway:
    """Implements `memory.ports.LLMPort` (plus `chat` for function calling) over the `openai` client.

    `available(task)` is synchronous and cheap: it checks the configuration and a cached budget
    verdict, refreshed after every request and by `await refresh()`; a cached "over budget" verdict
    expires after `budget_recheck_seconds`, after which the next request checks the database again.
    """

    def __init__(
        self,
        settings: LLMSettings,
        ledger: UsageLedger,
        clock: Clock,
        *,
        environ: Mapping[str, str] | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.settings = settings
        self.ledger = ledger
        self.clock = clock
        self._environ = environ
        self._sleep = sleep
        self._jitter = jitter
        self._semaphore = asyncio.Semaphore(settings.concurrency)
        self._clients: dict[tuple[str, str], openai.AsyncOpenAI] = {}
        self._blocked: dict[str, tuple[str, float]] = {}
        # Per task, the tokens each request in flight reserved, by request number (the order reserved).
        self._in_flight: dict[str, dict[int, int]] = {}
        self._numbers = itertools.count()
        self._warned: set[str] = set()
        self._no_json_mode: set[tuple[str, str]] = set()

    def reconfigure(self, settings: LLMSettings) -> None:
        """Apply reloaded settings (models, limits, budgets) to later requests; requests in flight
        finish under the old ones. Cached budget verdicts are dropped and re-checked on demand."""
        if settings.concurrency != self.settings.concurrency:
            self._semaphore = asyncio.Semaphore(settings.concurrency)
        self.settings = settings
        self.ledger.budgets = dict(settings.budgets)
        self._blocked.clear()
        self._warned.clear()

    # -- availability -------------------------------------------------------------------------

    def _config_reason(self, task: str) -> str | None:
        if not self.settings.enabled:
            return "LLM disabled ([llm] enabled = false)"
        resolved = self.settings.resolve(task, self._environ)
        if resolved is None:
            return f"no settings for task {task!r} ([llm.tasks.{task}])"
        if not self.settings.tasks[task].enabled:
            return f"task disabled ([llm.tasks.{task}] enabled = false)"
        if not resolved.base_url:
            return "no base_url configured"
        if not resolved.model:
            return "no model configured"
        return None

    def missing_settings(self, task: str) -> bool:
        """True when the LLM and `task` are on but the task has no settings, base URL or model: a
        set-up left unfinished, unlike the LLM or the task switched off (or a spent budget)."""
        if self._config_reason(task) is None or not self.settings.enabled:
            return False
        return task not in self.settings.tasks or self.settings.tasks[task].enabled

    def unavailable_reason(self, task: str) -> str | None:
        """Why `task` cannot use the LLM right now (configuration or cached budget), or None."""
        reason = self._config_reason(task)
        if reason:
            return reason
        blocked = self._blocked.get(task)
        if blocked and self.clock.now().timestamp() - blocked[1] < self.settings.budget_recheck_seconds:
            return f"over budget: {blocked[0]}"
        return None

    def available(self, task: str) -> bool:
        """True when the task is configured and was not over budget at the last check."""
        return self.unavailable_reason(task) is None

    def configured(self, task: str) -> bool:
        """True when the task has a model set up and enabled, over budget or not; not when a cap of 0
        keeps it on its offline path for good (config.toml: such a task is never asked)."""
        budget = self.settings.budgets.get(task)
        capped = budget is not None and 0 in (budget.tokens_per_hour, budget.tokens_per_day)
        return self._config_reason(task) is None and not capped

    async def refresh(self) -> None:
        """Re-check every configured task's budget against the database (for schedulers, doctor)."""
        for task in self.settings.tasks:
            await self._check_budget(task)

    async def _check_budget(self, task: str, in_flight: int = 0) -> str | None:
        reason = await self.ledger.over_budget(task, in_flight)
        if reason is None:
            self._blocked.pop(task, None)
            self._warned.discard(task)
            return None
        self._blocked[task] = (reason, self.clock.now().timestamp())
        if task not in self._warned:
            self._warned.add(task)
            log.warning("LLM budget reached, task %r falls back to its offline path: %s", task, reason)
        return reason

    def _resolve(self, task: str) -> ResolvedTask:
        reason = self._config_reason(task)
        if reason:
            raise LLMUnavailable(task, reason)
        resolved = self.settings.resolve(task, self._environ)
        assert resolved is not None  # _config_reason checked it
        return resolved

    # -- requests ------------------------------------------------------------------------------

    def _client(self, resolved: ResolvedTask) -> openai.AsyncOpenAI:
        key = (resolved.base_url, resolved.api_key)
        client = self._clients.get(key)
        if client is None:
            client = openai.AsyncOpenAI(
                base_url=resolved.base_url,
                api_key=resolved.api_key or _NO_KEY,
                timeout=self.settings.timeout_seconds,
                max_retries=0,  # ours are the only retries
            )
            self._clients[key] = client
        return client

    async def _record(
        self,
        resolved: ResolvedTask,
        prompt_tokens: int,
        completion_tokens: int,
        error: str = "",
    ) -> None:
        await self.ledger.record(
            resolved.task, resolved.model, prompt_tokens, completion_tokens, ok=not error, error=error
        )

    async def _record_response(
        self, resolved: ResolvedTask, estimated_prompt: int, response: ChatCompletion, error: str
    ) -> None:
        usage = response.usage
        reported = [
            getattr(usage, name, None) or 0 for name in ("prompt_tokens", "completion_tokens", "total_tokens")
        ]
        if reported[0] or reported[1]:
            prompt, completion = reported[0], reported[1]
        elif reported[2]:
            # Only a total (some servers): the provider's count, split by the completion's estimate.
            completion = min(_estimate_completion(response), reported[2])
            prompt = reported[2] - completion
        else:
            prompt, completion = estimated_prompt, _estimate_completion(response)
        await self._record(resolved, prompt, completion, error)
        await self._check_budget(resolved.task)

    async def _request(
        self,
        resolved: ResolvedTask,
        messages: Sequence[Mapping[str, Any]],
        parse: Callable[[ChatCompletion], Parsed],
        *,
        json_mode: bool = False,
        tools: Sequence[Any] | None = None,
        tool_choice: Any = None,
    ) -> Parsed:
        """One logical request: budget checks, retries, token accounting, then `parse` on the answer.

        The request holds a reservation of its most tokens (prompt estimate + `max_tokens`) while in
        flight, and the budget check before each attempt counts the reservations made before it:
        concurrent requests of a task cannot all pass a check before any of them is recorded, so a cap is
        overshot by at most one attempt, as without concurrency. Checked before every attempt, not only
        the first: retries of a request that timed out, each recorded with its estimated prompt, overshot
        a cap by up to `max_retries` prompts.

        Raises LLMUnavailable for every failure except BadAnswer from `parse`, which is re-raised;
        LLMRefused (a subclass) for a request the endpoint refuses: a 4xx, or a 200 a content filter
        left no usable answer in (no choices, or a choice it stopped with nothing usable in it).
        """
        task = resolved.task
        number = next(self._numbers)
        reserved = self._in_flight.setdefault(task, {})
        prompt = _estimate_prompt(messages, tools)  # the same for every attempt
        reserved[number] = prompt + resolved.max_tokens

        async def admit() -> None:
            ahead = sum(tokens for other, tokens in reserved.items() if other < number)
            reason = await self._check_budget(task, ahead)
            if reason:
                raise LLMUnavailable(task, f"over budget: {reason}")

        try:
            return await self._attempts(
                resolved,
                messages,
                parse,
                admit,
                prompt=prompt,
                json_mode=json_mode,
                tools=tools,
                tool_choice=tool_choice,
            )
        finally:
            del reserved[number]
            if not reserved:
                del self._in_flight[task]

    async def _send(
        self,
        resolved: ResolvedTask,
        client: openai.AsyncOpenAI,
        kwargs: dict[str, Any],
        estimated_prompt: int,
    ) -> ChatCompletion:
        """One HTTP request. Cancelled while its answer is awaited (shutdown, a caller's timeout), it is
        held in the ledger with its estimated prompt tokens and marked cancelled: the provider may have
        charged it. Held, not written: a cancelled task must not wait on the database.

        The client's timeout bounds each read only: a server (or a proxy keeping a slow answer's
        connection open) sending a byte now and then held the request for as long as it liked. The
        whole request gets `timeout_seconds`, raising TimeoutError."""
        try:
            async with asyncio.timeout(resolved.timeout_seconds):
                return await client.chat.completions.create(**kwargs)
        except asyncio.CancelledError:
            self.ledger.keep(
                resolved.task, resolved.model, estimated_prompt, 0, ok=False, error=CANCELLED, cancelled=True
            )
            raise

    async def _attempts(
        self,
        resolved: ResolvedTask,
        messages: Sequence[Mapping[str, Any]],
        parse: Callable[[ChatCompletion], Parsed],
        admit: Callable[[], Awaitable[None]],
        *,
        prompt: int,
        json_mode: bool,
        tools: Sequence[Any] | None,
        tool_choice: Any,
    ) -> Parsed:
        """The attempts of one request, each let through by `admit` (the budget check) first; `prompt`:
        the request's estimated prompt tokens."""
        task = resolved.task
        client = self._client(resolved)
        format_key = (resolved.base_url, resolved.model)
        use_json = json_mode and resolved.json_mode and format_key not in self._no_json_mode
        attempt = 0
        while True:
            await admit()
            kwargs: dict[str, Any] = {
                "model": resolved.model,
                "messages": list(messages),
                "temperature": resolved.temperature,
                resolved.max_tokens_field: resolved.max_tokens,
                "timeout": resolved.timeout_seconds,
            }
            if use_json:
                kwargs["response_format"] = {"type": "json_object"}
            if tools:
                kwargs["tools"] = list(tools)
                if tool_choice is not None:
                    kwargs["tool_choice"] = tool_choice
            retry_after: float | None = None
            try:
                async with self._semaphore:
                    response = await self._send(resolved, client, kwargs, prompt)
            except UnicodeEncodeError as exc:  # the client encodes the body before sending anything
                raise LLMRefused(task, f"the request cannot be encoded: {exc}") from exc
            except openai.APIStatusError as exc:
                message = resolved.without_key(exc.message)
                failure = f"HTTP {exc.status_code}: {truncate(message, _ERROR_CHARS)}"
                said = _error_text(exc)
                if use_json and provider_errors.rejects_response_format(exc.status_code, said):
                    await self._record(resolved, 0, 0, failure)
                    log.info("%s rejects response_format; asking %s without it", format_key[0], format_key[1])
                    self._no_json_mode.add(format_key)
                    use_json = False
                    continue
                advice = provider_errors.advice(task, exc.status_code, said, sent_tools=bool(tools))
                if advice:  # first: the ledger keeps an error's start only
                    failure = f"HTTP {exc.status_code}: {advice} — {truncate(message, _ERROR_CHARS)}"
                await self._record(resolved, 0, 0, failure)
                # A spent quota answers 429 as a rate limit does, but will not pass by waiting.
                if not is_retryable_status(exc.status_code) or provider_errors.used_up_quota(said):
                    raise LLMRefused(task, failure) from exc
                retry_after = retry_after_seconds(exc.response.headers)
            except (openai.APIConnectionError, TimeoutError) as exc:
                # A request that timed out reached the provider, which has usually charged its prompt
                # by then: it counts with its estimated prompt tokens, as a cancelled one does. A
                # connection that failed sent nothing and costs nothing.
                timed_out = isinstance(exc, openai.APITimeoutError | TimeoutError)
                failure = (
                    f"timed out after {resolved.timeout_seconds:g}s"
                    if timed_out
                    else f"connection failed: {resolved.without_key(str(exc))}"
                )
                await self._record(resolved, prompt if timed_out else 0, 0, failure)
            except (openai.OpenAIError, json.JSONDecodeError) as exc:
                body = "the body is not JSON: " if isinstance(exc, json.JSONDecodeError) else ""
                failure = f"unusable response: {body}{resolved.without_key(str(exc))}"
                await self._record(resolved, 0, 0, failure)
                raise LLMUnavailable(task, failure) from exc
            else:
                problem = _malformed(response)
                if problem is not None:
                    failure = f"unusable response: {truncate(problem, _ERROR_CHARS)}"
                    await self._record(resolved, 0, 0, failure)
                    raise LLMUnavailable(task, failure)
                if _emptied(response):
                    # A content filter's refusal (200 with `"choices": []`, or a choice it stopped with
                    # nothing in it): asking for a repair, or again, gets the same. Not logged here:
                    # the caller logs the reason once.
                    refusal = _no_answer(response)
                    await self._record_response(resolved, prompt, response, refusal)
                    raise LLMRefused(task, refusal)
                declined = _model_refusal(response)
                if declined is not None:
                    await self._record_response(resolved, prompt, response, declined)
                    raise LLMRefused(task, declined)
                try:
                    parsed = parse(response)
                except BadAnswer as exc:
                    if not _stopped_by_filter(response):
                        await self._record_response(resolved, prompt, response, str(exc))
                        raise
                    # What a content filter left of the answer is unusable: a repair is stopped at
                    # the same point, so this is the same refusal as an emptied answer.
                    refusal = _no_answer(response, str(exc))
                    await self._record_response(resolved, prompt, response, refusal)
                    raise LLMRefused(task, refusal) from None
                if _stopped_by_filter(response):
                    log.info("LLM task %r: a content filter stopped the answer; using what it kept", task)
                await self._record_response(resolved, prompt, response, "")
                return parsed
            if attempt >= self.settings.max_retries:
                raise LLMUnavailable(task, f"{failure} (after {attempt + 1} attempts)")
            delay = backoff_delay(
                attempt,
                self.settings.backoff_seconds,
                self.settings.max_backoff_seconds,
                retry_after,
                self._jitter,
            )
            log.info("LLM task %r: %s; retry %d in %.2fs", task, failure, attempt + 1, delay)
            attempt += 1
            await self._sleep(delay)

    # -- LLMPort -------------------------------------------------------------------------------

    async def complete_json(
        self, task: str, messages: Sequence[dict[str, Any]], schema: type[Model]
    ) -> Model:
        """A JSON answer validated against `schema`. On invalid JSON or a schema mismatch the error is
        sent back once for a corrected answer; a second failure raises LLMUnavailable."""
        resolved = self._resolve(task)
        schema_text = json.dumps(schema.model_json_schema(), ensure_ascii=False, separators=(",", ":"))
        prompt = _with_schema(messages, schema_text)
        answers: list[str] = []

        def parse(response: ChatCompletion) -> Model:
            content = _first_message(response).content or ""
            answers.append(content)
            # An answer the token limit cut off says so: "invalid JSON" alone sends an admin looking
            # at the model, and the repair request asking for the same again is cut off again.
            cut = (
                f"the answer was cut off at max_tokens ({resolved.max_tokens}); answer more briefly. "
                if response.choices[0].finish_reason == "length"
                else ""
            )
            try:
                return schema.model_validate(extract_json(content))
            except NoJSON as exc:
                raise BadAnswer(f"{cut}invalid JSON: {exc}") from exc
            except ValidationError as exc:
                raise BadAnswer(cut + _describe_validation(exc)) from exc

        try:
            return await self._request(resolved, prompt, parse, json_mode=True)
        except BadAnswer as first:
            log.info("LLM task %r: %s; asking for a repair", task, first)
            repair = [
                *prompt,
                {"role": "assistant", "content": truncate(answers[-1] if answers else "", _ECHO_CHARS)},
                {
                    "role": "user",
                    "content": REPAIR_INSTRUCTION.format(
                        error=truncate(str(first), _ERROR_CHARS), schema=schema_text
                    ),
                },
            ]
            try:
                return await self._request(resolved, repair, parse, json_mode=True)
            except BadAnswer as second:
                raise LLMBadAnswer(
                    task, f"invalid JSON after repair: {truncate(str(second), _ERROR_CHARS)}"
                ) from None

    async def complete_text(self, task: str, messages: Sequence[dict[str, Any]]) -> str:
        """A plain-text answer (reasoning blocks removed); an empty answer raises LLMUnavailable."""
        resolved = self._resolve(task)

        def parse(response: ChatCompletion) -> str:
            _whole(response)
            text = answer_text(_first_message(response).content or "")
            if not text:
                raise BadAnswer("empty answer")
            return text

        try:
            return await self._request(resolved, messages, parse)
        except BadAnswer as exc:
            raise LLMBadAnswer(task, str(exc)) from None

    async def chat(
        self,
        task: str,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> ChatReply:
        """One assistant turn with optional function calling; the caller runs the tool loop,
        appending `reply.as_message()` and the tool results before calling again."""
        resolved = self._resolve(task)

        def parse(response: ChatCompletion) -> ChatReply:
            _whole(response)
            message = _first_message(response)
            sent = [call for call in message.tool_calls or [] if getattr(call, "function", None) is not None]
            calls = [
                ToolCall(
                    id=call_id, name=call.function.name, arguments=_arguments_text(call.function.arguments)
                )
                for call, call_id in zip(sent, _call_ids([call.id for call in sent]), strict=True)
            ]
            content = answer_text(message.content) if message.content else None
            reasoning = (message.model_extra or {}).get("reasoning_content")
            return ChatReply(
                content=content or None,
                tool_calls=calls,
                finish_reason=response.choices[0].finish_reason,
                model=response.model or resolved.model,
                reasoning=reasoning if isinstance(reasoning, str) else None,
            )

        try:
            return await self._request(resolved, messages, parse, tools=tools, tool_choice=tool_choice)
        except BadAnswer as exc:
            raise LLMUnavailable(task, str(exc)) from None

    async def report(self) -> dict[str, TaskReport]:
        """Per task, for `qunyi doctor`: the model in use, why it is unavailable (None when usable)
        and its token usage against the caps. Refreshes the cached budget verdicts first."""
        await self.refresh()
        usage = await self.ledger.summary()
        result: dict[str, TaskReport] = {}
        for task in sorted(set(self.settings.tasks) | set(usage)):
            resolved = self.settings.resolve(task, self._environ)
            result[task] = TaskReport(
                model=resolved.model if resolved else "",
                base_url=resolved.base_url if resolved else "",
                unavailable_reason=self.unavailable_reason(task),
                usage=usage.get(task),
            )
        return result

    async def close(self) -> None:
        """Write the usage the ledger still holds, and close the HTTP clients."""
        await self.ledger.close()
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


def build_gateway(settings: LLMSettings, db: Database, clock: Clock) -> LLMGateway:
    """The usual wiring: a ledger on `db` with the settings' budgets, and a gateway on top."""
    return LLMGateway(settings, UsageLedger(db, clock, settings.budgets), clock)
