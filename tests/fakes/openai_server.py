"""A fake OpenAI-compatible server on 127.0.0.1 for tests: the real `openai` client talks to it.

Chat completions follow a scripted queue of behaviours (an answer, tool calls, an error status, a
delay); when the queue is empty a `default` callable decides. Every request is recorded, and the
number of requests in flight at once is tracked. Embeddings are deterministic hashed character
n-gram vectors, so texts sharing characters get similar vectors.

    server.script(Answer("not json"), Answer('{"ok": true}'))
    server.script(Fail(429, retry_after=0.01), Delay(1.0), Answer("hi"))
    held = Hold(Answer("hi")); server.script(held); ...; await held.reached.wait(); held.release.set()
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
import math
import socket
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web


@dataclass(frozen=True)
class Answer:
    """A 200 chat completion. `usage`: "auto" counts characters, None leaves usage out."""

    content: str | None = ""
    tool_calls: list[dict[str, Any]] | None = None
    usage: tuple[int, int] | Literal["auto"] | None = "auto"
    finish_reason: str | None = None
    filtered: tuple[str, ...] = ()  # categories the choice's `content_filter_results` marks as filtered
    refusal: str | None = None  # the message's `refusal` (OpenAI's safety refusal; content then null)
    reasoning: str | None = None  # the message's `reasoning_content` (DeepSeek's thinking mode)


@dataclass(frozen=True)
class Fail:
    """An error status with an OpenAI-style error body (and Retry-After when given)."""

    status: int
    message: str = "simulated failure"
    retry_after: float | None = None
    headers: dict[str, str] = field(default_factory=dict)
    code: str | int | None = (
        None  # the error's `code` (a provider's: "insufficient_quota", 1113…); None: the status
    )
    param: str | None = None  # the request field the error names, as OpenAI's `param`


@dataclass(frozen=True)
class Delay:
    """Wait `seconds` (long enough for the client to time out), then behave as `then`."""

    seconds: float
    then: Answer | Fail = Answer("late answer")


@dataclass(frozen=True)
class Hold:
    """Set `reached` when the request arrives, wait until `release` is set, then behave as `then`: lets
    a test change the database while a job waits on the model."""

    then: Answer | Fail
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True)
class Raw:
    """A body sent as is (status 200 unless told): a proxy's HTML page, `{}`, JSON that is no completion."""

    body: str
    content_type: str = "application/json"
    status: int = 200


@dataclass(frozen=True)
class Trickle:
    """Send the status and headers at once, then a space every `every` seconds (as a proxy keeping a
    slow answer's connection open does) for `seconds`, then the completion of `then`: no read waits
    long, but the answer takes `seconds`."""

    seconds: float
    every: float = 0.05
    then: Answer = Answer("late answer")


Behaviour = Answer | Fail | Delay | Hold | Raw | Trickle


# How OpenAI's reasoning models (o1, o3, gpt-5…) refuse `max_tokens` and a temperature other than 1.
REFUSED_MAX_TOKENS = Fail(
    400,
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead.",
    code="unsupported_parameter",
    param="max_tokens",
)
REFUSED_TEMPERATURE = Fail(
    400,
    "Unsupported value: 'temperature' does not support 0.7 with this model. "
    "Only the default (1) value is supported.",
    code="unsupported_value",
    param="temperature",
)


def llm_toml(base_url: str) -> str:
    """The `[llm]` table of a config.toml pointing a bot process at the server at `base_url`, with no
    retries and a timeout no held request reaches."""
    return (
        f'[llm]\nenabled = true\nbase_url = "{base_url}"\napi_key = "test"\nmodel = "m"\n'
        "timeout_seconds = 600.0\nmax_retries = 0\n"
    )


def answer_json(value: Any, **kwargs: Any) -> Answer:
    """An answer whose content is `value` serialised as JSON."""
    return Answer(json.dumps(value, ensure_ascii=False), **kwargs)


def filtered(categories: tuple[str, ...] = (), usage: tuple[int, int] | None = None) -> Raw:
    """A content filter's refusal: 200 with `"choices": []`, with Azure-style `prompt_filter_results`
    marking `categories` as filtered (none: no such field) and `usage` when given."""
    body: dict[str, Any] = {
        "id": "chatcmpl-filtered",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "m",
        "choices": [],
    }
    if categories:
        body["prompt_filter_results"] = [{"prompt_index": 0, "content_filter_results": _verdicts(categories)}]
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return Raw(json.dumps(body))


def _verdicts(categories: tuple[str, ...]) -> dict[str, Any]:
    """Azure-style `content_filter_results` marking `categories` as filtered (and one category not)."""
    verdicts = {name: {"filtered": True, "severity": "high"} for name in categories}
    return {**verdicts, "self_harm": {"filtered": False}}


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    """One entry for `Answer(tool_calls=[...])`."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "name": name, "arguments": args}


@dataclass(frozen=True)
class ReceivedRequest:
    """A request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))


def _count_tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4)) if text else 0


def _prompt_text(body: dict[str, Any]) -> str:
    return " ".join(str(message.get("content") or "") for message in body.get("messages", []))


def embed_text(text: str, dimension: int) -> list[float]:
    """A unit vector from hashed character unigrams and bigrams (deterministic across runs)."""
    vector = [0.0] * dimension
    folded = text.casefold()
    grams = list(folded) + [folded[i : i + 2] for i in range(len(folded) - 1)]
    for gram in grams:
        digest = hashlib.blake2b(gram.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dimension
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(value * value for value in vector))
    if norm == 0:
        vector[0] = 1.0
        return vector
    return [value / norm for value in vector]


def _error(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    code: str | int | None = None,
    param: str | None = None,
) -> web.Response:
    error = {
        "message": message,
        "type": "fake_error",
        "param": param,
        "code": status if code is None else code,
    }
    return web.json_response({"error": error}, status=status, headers=headers)


class FakeOpenAI:
    """The server. Use `async with FakeOpenAI() as server:` or the `fake_llm` fixture."""

    def __init__(self, embedding_dimension: int = 16) -> None:
        self.embedding_dimension = embedding_dimension
        # Embedding limits, refused as DashScope refuses too many inputs (400) and SiliconFlow a text
        # over a model's tokens (413); None: no limit.
        self.embedding_inputs: int | None = None
        self.embedding_chars: int | None = None
        self.embedding_base64 = False  # answer base64 vectors even when not asked to, as some proxies do
        self.queue: deque[Behaviour] = deque()
        self.default: Callable[[dict[str, Any]], Behaviour | str] = lambda _body: Answer("ok")
        self.requests: list[ReceivedRequest] = []
        # Request fields the model refuses, as newer OpenAI models refuse `max_tokens` (see `refuse`).
        self.refused: dict[str, tuple[Fail, Any]] = {}
        # DeepSeek's thinking mode: an assistant message with tool calls must give back its reasoning.
        self.wants_reasoning_back = False
        self.in_flight = 0
        self.max_in_flight = 0
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._port = 0

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client, ending in /v1."""
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def chat_requests(self) -> list[ReceivedRequest]:
        return [request for request in self.requests if request.path.endswith("/chat/completions")]

    def refuse(self, name: str, fail: Fail, unless: Any = None) -> None:
        """Answer `fail` to every chat request carrying the field `name` (unless its value is `unless`),
        before any scripted behaviour, as a model refusing a parameter does."""
        self.refused[name] = (fail, unless)

    def script(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next chat requests, in order."""
        self.queue.extend(behaviours)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        # Cancel delayed handlers when the client gives up, so shutdown does not wait for them.
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    async def _read(self, request: web.Request) -> dict[str, Any] | web.Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _error(400, "request body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object")
        self.requests.append(ReceivedRequest(request.path, dict(request.headers), body))
        return body

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._read(request)
        if isinstance(body, web.Response):
            return body
        if not body.get("model") or not isinstance(body.get("messages"), list) or not body["messages"]:
            return _error(400, "model and a non-empty messages list are required")
        if body.get("stream"):
            return _error(400, "this fake does not stream")
        if self.wants_reasoning_back:
            for index, message in enumerate(body["messages"]):
                if message.get("tool_calls") and "reasoning_content" not in message:
                    where = f"the assistant message at message index {index}"
                    return _error(
                        400, f"Missing `reasoning_content` field in {where}.", code="invalid_request_error"
                    )
        for name, (fail, unless) in self.refused.items():
            if name in body and (unless is None or body[name] != unless):
                return await self._behave(body, fail)
        behaviour: Behaviour | str = self.queue.popleft() if self.queue else self.default(body)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if isinstance(behaviour, Trickle):
                return await self._trickle(request, body, behaviour)
            return await self._behave(body, behaviour)
        finally:
            self.in_flight -= 1

    async def _behave(self, body: dict[str, Any], behaviour: Behaviour | str) -> web.Response:
        if isinstance(behaviour, str):
            behaviour = Answer(behaviour)
        if isinstance(behaviour, Delay):
            await asyncio.sleep(behaviour.seconds)
            behaviour = behaviour.then
        if isinstance(behaviour, Hold):
            behaviour.reached.set()
            await behaviour.release.wait()
            behaviour = behaviour.then
        if isinstance(behaviour, Fail):
            headers = dict(behaviour.headers)
            if behaviour.retry_after is not None:
                headers["Retry-After"] = f"{behaviour.retry_after:g}"
            return _error(behaviour.status, behaviour.message, headers, behaviour.code, behaviour.param)
        if isinstance(behaviour, Raw):
            return web.Response(
                text=behaviour.body, content_type=behaviour.content_type, status=behaviour.status
            )
        return web.json_response(self._completion(body, behaviour))

    async def _trickle(
        self, request: web.Request, body: dict[str, Any], trickle: Trickle
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        loop = asyncio.get_running_loop()
        end = loop.time() + trickle.seconds
        while loop.time() < end:
            await response.write(b" ")
            await asyncio.sleep(trickle.every)
        await response.write(json.dumps(self._completion(body, trickle.then)).encode())
        await response.write_eof()
        return response

    def _completion(self, body: dict[str, Any], answer: Answer) -> dict[str, Any]:
        number = next(self._ids)
        message: dict[str, Any] = {"role": "assistant", "content": answer.content}
        if answer.refusal is not None:
            message["refusal"] = answer.refusal
        if answer.reasoning is not None:
            message["reasoning_content"] = answer.reasoning
        if answer.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id") or f"call_{number}_{index}",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"]},
                }
                for index, call in enumerate(answer.tool_calls)
            ]
        finish = answer.finish_reason or ("tool_calls" if answer.tool_calls else "stop")
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        if answer.filtered:
            choice["content_filter_results"] = _verdicts(answer.filtered)
        result: dict[str, Any] = {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": 1_700_000_000 + number,
            "model": body["model"],
            "choices": [choice],
        }
        if answer.usage is not None:
            if answer.usage == "auto":
                prompt = _count_tokens(_prompt_text(body))
                completion = _count_tokens(answer.content or "") + sum(
                    _count_tokens(call["arguments"]) for call in answer.tool_calls or []
                )
            else:
                prompt, completion = answer.usage
            result["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return result

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await self._read(request)
        if isinstance(body, web.Response):
            return body
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else raw
        if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
            return _error(400, "input must be a string or a list of strings")
        if self.embedding_inputs is not None and len(texts) > self.embedding_inputs:
            limit = f"batch size is invalid, it should not be larger than {self.embedding_inputs}."
            return _error(
                400, f"<400> InternalError.Algo.InvalidParameter: Value error, {limit}: input.contents"
            )
        if self.embedding_chars is not None and any(len(text) > self.embedding_chars for text in texts):
            return _error(413, f"input must have less than {self.embedding_chars} tokens")
        dimension = int(body.get("dimensions") or self.embedding_dimension)
        vectors = [embed_text(text, dimension) for text in texts]
        # The openai client asks for base64 (packed little-endian float32) unless told otherwise.
        as_base64 = self.embedding_base64 or body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": index,
                "embedding": (
                    base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
                    if as_base64
                    else vector
                ),
            }
            for index, vector in enumerate(vectors)
        ]
        tokens = sum(_count_tokens(text) for text in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "fake-embed"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )
