"""The gateway against the real `openai` client, a fake OpenAI-compatible server and a real database."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field
from sqlalchemy import select

from bot.app import CHATTY_LOGGERS, set_log_level
from bot.llm.gateway import LLMGateway
from bot.llm.settings import Budget, LLMSettings, TaskModel
from bot.llm.usage import MAX_REQUEST_TOKENS, UsageLedger
from memory.clock import ManualClock
from memory.history.digest import DigestAnswer
from memory.model_answer import ModelAnswer
from memory.models import LlmUsage
from memory.ports import LLMRefused, LLMUnavailable
from memory.storage.database import Database
from memory.text import estimate_tokens
from memory.topics.check import TopicAnswer, TopicItem
from tests.fakes.openai_server import (
    REFUSED_MAX_TOKENS,
    REFUSED_TEMPERATURE,
    Answer,
    Delay,
    Fail,
    FakeOpenAI,
    Hold,
    Raw,
    Trickle,
    answer_json,
    filtered,
    tool_call,
)


class Topic(BaseModel):
    title: str
    keywords: list[str]


GOOD = {"title": "周末爬山", "keywords": ["爬山", "周末"]}
ASK = [{"role": "user", "content": "给这段聊天起个话题标题"}]


@pytest.fixture
def sleeps() -> list[float]:
    return []


GatewayFactory = Callable[..., LLMGateway]


@pytest.fixture
async def make_gateway(
    fake_llm: FakeOpenAI, db: Database, clock: ManualClock, sleeps: list[float]
) -> AsyncIterator[GatewayFactory]:
    """Builds gateways on the fake server with tiny timeouts and delays; closes them afterwards."""
    made: list[LLMGateway] = []

    async def record_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        await asyncio.sleep(seconds)

    def make(**overrides: Any) -> LLMGateway:
        values: dict[str, Any] = {
            "enabled": True,
            "base_url": fake_llm.base_url,
            "model": "fake-model",
            "api_key": "test-key",
            "timeout_seconds": 2.0,
            "max_retries": 2,
            "backoff_seconds": 0.01,
            "max_backoff_seconds": 0.2,
        }
        values.update(overrides)
        settings = LLMSettings.model_validate(values)
        gateway = LLMGateway(
            settings,
            UsageLedger(db, clock, settings.budgets),
            clock,
            sleep=record_sleep,
            jitter=lambda: 0.5,  # the middle of the jitter range: delays are exactly base·2^attempt
        )
        made.append(gateway)
        return gateway

    yield make
    for gateway in made:
        await gateway.close()


async def usage_rows(db: Database) -> list[LlmUsage]:
    async with db.read() as session:
        return list((await session.execute(select(LlmUsage).order_by(LlmUsage.id))).scalars())


def last_user_text(messages: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


async def test_json_answer_is_validated_and_the_schema_is_sent(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    fake_llm.script(answer_json(GOOD))
    gateway = make_gateway()
    topic = await gateway.complete_json("topic", ASK, Topic)
    assert topic == Topic(**GOOD)
    [request] = fake_llm.chat_requests
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.body["model"] == "fake-model"
    system = request.messages[0]
    assert system["role"] == "system" and '"keywords"' in system["content"]
    assert request.messages[1] == ASK[0]


async def test_json_in_fences_and_prose_needs_no_repair(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    fake_llm.script(Answer('好的：\n```json\n{"title": "t", "keywords": []}\n```'))
    topic = await make_gateway().complete_json("topic", ASK, Topic)
    assert topic.title == "t"
    assert len(fake_llm.chat_requests) == 1


async def test_malformed_json_is_repaired_in_one_round(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database
) -> None:
    fake_llm.script(Answer('{"title": "周末爬山", keywords: [爬山'), answer_json(GOOD))
    topic = await make_gateway().complete_json("topic", ASK, Topic)
    assert topic == Topic(**GOOD)
    first, repair = fake_llm.chat_requests
    assert repair.messages[: len(first.messages)] == first.messages
    assert repair.messages[-2] == {"role": "assistant", "content": '{"title": "周末爬山", keywords: [爬山'}
    assert "invalid JSON" in last_user_text(repair.messages)
    rows = await usage_rows(db)
    assert [row.ok for row in rows] == [False, True]
    assert rows[0].error.startswith("invalid JSON")


async def test_schema_mismatch_is_repaired_with_the_field_named(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    fake_llm.script(answer_json({"title": "t"}), answer_json({"title": "t", "keywords": ["k"]}))
    topic = await make_gateway().complete_json("topic", ASK, Topic)
    assert topic.keywords == ["k"]
    repair_text = last_user_text(fake_llm.chat_requests[1].messages)
    assert "schema mismatch" in repair_text and "keywords" in repair_text


class Point(ModelAnswer):
    text: str = Field(max_length=20)


class Titled(ModelAnswer):
    title: str = Field(max_length=200)
    tags: list[Annotated[str, Field(max_length=8)]] = Field(default_factory=list)
    points: list[Point] = Field(default_factory=list)
    count: int = Field(ge=0)


async def test_text_a_little_or_far_over_its_max_length_is_cut_without_a_repair_round(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database
) -> None:
    """A title a few characters over its 200 failed validation and cost a repair round
    (and, overrun again, the whole answer), although every consumer cuts such texts tighter anyway.
    Text over its max length, however far, is now cut to it on a grapheme boundary, ending in "…",
    in nested answers and lists too; other mistakes are still sent back for a repair."""
    family = "👨‍👩‍👧‍👦"  # one grapheme of 7 code points, across the 200th
    title = "周末去爬山" * 39 + "顺便" + family  # 197 + 7 = 204 code points
    far = "很长的要点" * 100
    fake_llm.script(
        answer_json(
            {"title": title, "tags": ["爬山", "九溪徒步路线推荐一下"], "points": [{"text": far}], "count": 1}
        ),
        answer_json({"title": title, "count": -1}),
        answer_json({"title": "t" * 201, "count": 2}),
    )
    gateway = make_gateway()
    answer = await gateway.complete_json("topic", ASK, Titled)
    assert answer.title == "周末去爬山" * 39 + "顺便…", "cut before the emoji, not inside it"
    assert answer.tags == ["爬山", "九溪徒步路线推…"]
    assert answer.points == [Point(text="很长的要点" * 3 + "很长的要…")]
    assert len(fake_llm.chat_requests) == 1, "no repair round"
    repaired = await gateway.complete_json("topic", ASK, Titled)
    assert (repaired.title, repaired.count) == ("t" * 199 + "…", 2)
    repair_text = last_user_text(fake_llm.chat_requests[2].messages)
    assert "count: Input should be greater than or equal to 0" in repair_text
    assert "title" not in repair_text.split("JSON Schema")[0], "only what is still wrong is sent back"
    assert [row.ok for row in await usage_rows(db)] == [True, False, True]


class Tagged(ModelAnswer):
    tags: list[Annotated[str, Field(max_length=8)]] = Field(max_length=2)


async def test_lists_over_their_max_length_keep_their_first_items_without_a_repair_round(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database
) -> None:
    """A digest with 31 keywords where 30 are allowed, a topic answer with 201 topics, failed validation
    and cost a repair round (and, overrun again, the whole answer). A list over its max length, in any
    answer schema and at any depth, now keeps its first items up to the limit; a text too long among
    the items kept (which pydantic reports only once the list fits) is then cut as before."""
    keywords = [f"关键词{n}" for n in range(35)]
    points = [f"要点{n}" for n in range(40)]
    digest = {
        "theme": "周末爬山",
        "keywords": keywords,
        "summary": "大家约了周六去爬山。",
        "key_points": points,
    }
    topics = [{"topic": f"话题{n}", "message_ids": [n]} for n in range(201)]
    topics[0] = {"topic": "爬" * 250, "message_ids": list(range(1001))}
    tags = ["九溪徒步路线推荐一下", "爬山", "周末", "杭州"]
    fake_llm.script(answer_json(digest), answer_json({"topics": topics}), answer_json({"tags": tags}))
    gateway = make_gateway()
    answer = await gateway.complete_json("summary", ASK, DigestAnswer)
    assert (answer.keywords, answer.key_points) == (keywords[:30], points[:30])
    assert (answer.theme, answer.summary) == ("周末爬山", "大家约了周六去爬山。")
    checked = await gateway.complete_json("topic", ASK, TopicAnswer)
    assert [item.topic for item in checked.topics[1:]] == [f"话题{n}" for n in range(1, 200)]
    assert checked.topics[0] == TopicItem(topic="爬" * 199 + "…", message_ids=list(range(1000)))
    tagged = await gateway.complete_json("topic", ASK, Tagged)
    assert tagged.tags == ["九溪徒步路线推…", "爬山"], "the kept tag too long is cut once the list fits"
    assert len(fake_llm.chat_requests) == 3, "no repair round"
    assert [row.ok for row in await usage_rows(db)] == [True, True, True]


async def test_still_malformed_after_repair_raises(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    fake_llm.script(Answer("not json"), Answer("still {not json"))
    with pytest.raises(LLMUnavailable) as info:
        await make_gateway().complete_json("topic", ASK, Topic)
    assert info.value.task == "topic"
    assert info.value.reason.startswith("invalid JSON after repair:")
    assert len(fake_llm.chat_requests) == 2


async def test_an_answer_cut_off_by_the_token_limit_says_so(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    """A JSON answer the token limit cut off (finish_reason "length"): the repair request and the
    error said only "invalid JSON", so the model answered as long again and an admin looked at the
    model instead of at max_tokens. Both now say the answer was cut off."""
    cut = '{"title": "周末爬山", "keywords": ["爬山", "周'
    fake_llm.script(Answer(cut, finish_reason="length"), Answer(cut, finish_reason="length"))
    with pytest.raises(LLMUnavailable) as info:
        await make_gateway().complete_json("topic", ASK, Topic)
    said = "the answer was cut off at max_tokens (1024); answer more briefly. invalid JSON"
    assert info.value.reason.startswith(f"invalid JSON after repair: {said}")
    assert said in fake_llm.chat_requests[1].messages[-1]["content"]


async def test_timeout_is_retried_then_succeeds(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database, sleeps: list[float]
) -> None:
    fake_llm.script(Delay(2.0, answer_json(GOOD)), answer_json(GOOD))
    gateway = make_gateway(timeout_seconds=0.2)
    topic = await gateway.complete_json("topic", ASK, Topic)
    assert topic.title == GOOD["title"]
    assert len(fake_llm.chat_requests) == 2
    assert sleeps == pytest.approx([0.01])
    rows = await usage_rows(db)
    assert [(row.ok, row.error) for row in rows] == [(False, "timed out after 0.2s"), (True, "")]


async def test_a_timed_out_request_counts_its_estimated_prompt_in_the_budgets_and_summaries(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database
) -> None:
    """A request that timed out was recorded with 0 tokens, though the provider has usually charged
    its prompt by then: a model that always timed out never reached a cap, and `/usage` and doctor
    showed nothing spent. It now counts with its estimated prompt tokens (as a cancelled request
    does); a connection that failed sent nothing and still counts 0."""
    question = "上周末去哪里爬山了" * 40  # 360 CJK characters: a prompt estimated at 364 tokens
    fake_llm.script(Delay(2.0, Answer("晚了")))
    asked = [{"role": "user", "content": question}]
    capped = {"summary": Budget(tokens_per_hour=300)}
    gateway = make_gateway(timeout_seconds=0.2, max_retries=0, budgets=capped)
    with pytest.raises(LLMUnavailable, match=r"timed out after 0\.2s"):
        await gateway.complete_text("summary", asked)
    [row] = await usage_rows(db)
    assert (row.ok, row.prompt_tokens, row.completion_tokens) == (False, estimate_tokens(question) + 4, 0)
    summary = (await gateway.ledger.summary())["summary"]
    assert (summary["hour"], summary["failures"]) == (row.prompt_tokens, 1)
    with pytest.raises(LLMUnavailable, match="over budget: summary: 364 tokens in the last hour, cap 300"):
        await gateway.complete_text("summary", ASK)
    assert len(fake_llm.chat_requests) == 1, "nothing sent once the timed-out prompt spent the cap"

    async with FakeOpenAI() as gone:
        url = gone.base_url
    with pytest.raises(LLMUnavailable, match="connection failed"):
        await make_gateway(base_url=url, max_retries=0).complete_text("topic", asked)
    refused = (await usage_rows(db))[-1]
    assert (refused.task, refused.prompt_tokens, refused.completion_tokens) == ("topic", 0, 0)


async def test_a_retry_that_the_budget_cap_no_longer_allows_is_not_sent(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database
) -> None:
    """The budget was checked before a request's first attempt only: a request whose attempts all
    timed out recorded its estimated prompt for each and overshot a cap by up to `max_retries` prompts.
    Each retry is now checked as the first attempt is: a cap of 300 lets the first attempt (364 tokens
    estimated) go, and once it has timed out refuses the second with the over-budget error, unsent."""
    question = "上周末去哪里爬山了" * 40  # 360 CJK characters: a prompt estimated at 364 tokens
    fake_llm.script(Delay(2.0, Answer("晚了")))  # a retry sent would be answered "ok"
    capped = {"summary": Budget(tokens_per_hour=300)}
    gateway = make_gateway(timeout_seconds=0.2, max_retries=2, budgets=capped)
    with pytest.raises(LLMUnavailable) as info:
        await gateway.complete_text("summary", [{"role": "user", "content": question}])
    assert info.value.reason == "over budget: summary: 364 tokens in the last hour, cap 300"
    assert len(fake_llm.chat_requests) == 1, "the retry is not sent"
    rows = await usage_rows(db)
    assert [(row.ok, row.error, row.prompt_tokens) for row in rows] == [(False, "timed out after 0.2s", 364)]
    assert gateway._in_flight == {}, "the reservation is released"


async def test_a_retry_counts_the_reservations_made_before_its_request_only(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    """A retry is checked as its request's first attempt was: against the reservations of requests
    made before it, not of those made after it (which counted it), so of requests sharing a cap the
    first to ask is still the first served. With 200 tokens spent and a cap of 1,000, a later request
    reserving 904 tokens (an 804-token prompt and max_tokens 100) does not keep the earlier one's retry
    from being sent, and the earlier one's 106 did not keep the later one from being sent."""
    first, later = "爬山", "周末" * 400
    held = Hold(Answer("后来的"))

    def behave(body: dict[str, Any]) -> Fail | Hold | Answer:
        if last_user_text(body["messages"]) == later:
            return held
        tries = sum(last_user_text(request.messages) == first for request in fake_llm.chat_requests)
        return Fail(503) if tries == 1 else Answer("到了")

    fake_llm.default = behave
    gateway = make_gateway(
        max_retries=1,
        budgets={"summary": Budget(tokens_per_hour=1000)},
        tasks={"summary": TaskModel(max_tokens=100)},
    )
    await gateway.ledger.record("summary", "fake-model", 200, 0, ok=True)
    earlier = asyncio.create_task(gateway.complete_text("summary", [{"role": "user", "content": first}]))
    await asyncio.sleep(0)  # the earlier request reserves its tokens first
    other = asyncio.create_task(gateway.complete_text("summary", [{"role": "user", "content": later}]))
    await held.reached.wait()
    assert await earlier == "到了"
    held.release.set()
    assert await other == "后来的"
    assert len(fake_llm.chat_requests) == 3


async def test_a_server_trickling_its_answer_times_out_as_a_whole(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database
) -> None:
    """A server (or a proxy keeping a slow answer's connection open) sending a space every 50 ms: the
    client's timeout bounds each read only, so the request ran for the 30 s the server took, a reply
    or a job waiting on it. `timeout_seconds` now bounds the whole request, retried like a timeout."""
    fake_llm.script(Trickle(30.0, then=answer_json(GOOD)), answer_json(GOOD))
    gateway = make_gateway(timeout_seconds=0.5)
    topic = await gateway.complete_json("topic", ASK, Topic)
    assert topic.title == GOOD["title"]
    rows = await usage_rows(db)
    assert [(row.ok, row.error) for row in rows] == [(False, "timed out after 0.5s"), (True, "")]


async def test_rate_limit_respects_retry_after(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, sleeps: list[float]
) -> None:
    fake_llm.script(Fail(429, "slow down", retry_after=0.05), Fail(429, retry_after=60), Answer("你好"))
    text = await make_gateway().complete_text("reply", ASK)
    assert text == "你好"
    assert sleeps == [0.05, 0.2]  # the second Retry-After is capped by max_backoff_seconds
    assert len(fake_llm.chat_requests) == 3


async def test_server_errors_exhaust_retries(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, sleeps: list[float], db: Database
) -> None:
    fake_llm.script(Fail(500), Fail(502), Fail(500), Answer("never reached"))
    with pytest.raises(LLMUnavailable) as info:
        await make_gateway().complete_text("summary", ASK)
    assert "HTTP 500" in info.value.reason and "after 3 attempts" in info.value.reason
    assert len(fake_llm.chat_requests) == 3
    assert sleeps == pytest.approx([0.01, 0.02])  # doubles per attempt
    assert [row.ok for row in await usage_rows(db)] == [False, False, False]


async def test_client_errors_are_not_retried(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, sleeps: list[float]
) -> None:
    fake_llm.script(Fail(401, "bad key"), Answer("never reached"))
    with pytest.raises(LLMUnavailable) as info:
        await make_gateway().complete_text("reply", ASK)
    assert info.value.reason.startswith("HTTP 401")
    assert len(fake_llm.chat_requests) == 1 and sleeps == []


@pytest.mark.parametrize(
    "spent",
    [
        Fail(
            429,
            "You exceeded your current quota, please check your plan and billing details.",
            code="insufficient_quota",
        ),
        Fail(
            429,
            "Your account is suspended, please check your plan and billing details",
            code="exceeded_current_quota_error",
        ),
        Fail(429, "您的账户已欠费，请充值后重试。", code="1113"),
        Fail(402, "Insufficient Balance", code="invalid_request_error"),
    ],
)
async def test_a_spent_quota_is_refused_at_once_not_retried(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, sleeps: list[float], db: Database, spent: Fail
) -> None:
    """A 429 saying the quota or balance is spent (OpenAI, Moonshot, Zhipu) was retried as a rate limit,
    each request sent `max_retries` times more to an account that cannot pay for any of them."""
    fake_llm.script(spent, Answer("never reached"))
    with pytest.raises(LLMRefused) as info:
        await make_gateway().complete_text("summary", ASK)
    assert "quota or balance is used up" in info.value.reason and spent.message in info.value.reason
    assert len(fake_llm.chat_requests) == 1 and sleeps == []
    [row] = await usage_rows(db)
    assert "quota or balance is used up" in row.error


async def test_a_rate_limit_naming_a_quota_is_still_retried(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, sleeps: list[float]
) -> None:
    """DashScope's rate limit (code Throttling.RateQuota) passes by waiting: it is no spent quota."""
    fake_llm.script(
        Fail(429, "Requests rate limit exceeded, please try again later.", code="Throttling.RateQuota"),
        Answer("好"),
    )
    assert await make_gateway().complete_text("summary", ASK) == "好"
    assert len(fake_llm.chat_requests) == 2


async def test_max_tokens_refused_names_the_setting_which_then_sends_max_completion_tokens(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, sleeps: list[float]
) -> None:
    fake_llm.refuse("max_tokens", REFUSED_MAX_TOKENS)
    with pytest.raises(LLMRefused) as info:
        await make_gateway().complete_json("topic", ASK, Topic)
    assert 'set [llm.tasks.topic] max_tokens_field = "max_completion_tokens"' in info.value.reason
    assert len(fake_llm.chat_requests) == 1 and sleeps == []
    fake_llm.script(answer_json(GOOD))
    gateway = make_gateway(
        tasks={"topic": TaskModel(max_tokens=64, max_tokens_field="max_completion_tokens")}
    )
    assert (await gateway.complete_json("topic", ASK, Topic)).title == GOOD["title"]
    body = fake_llm.chat_requests[-1].body
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body


async def test_a_temperature_refused_names_the_setting_to_change(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, sleeps: list[float]
) -> None:
    fake_llm.refuse("temperature", REFUSED_TEMPERATURE, unless=1)
    with pytest.raises(LLMRefused) as info:
        await make_gateway().complete_text("reply", ASK)
    assert "set [llm.tasks.reply] temperature = 1" in info.value.reason
    assert len(fake_llm.chat_requests) == 1 and sleeps == []
    fake_llm.script(Answer("好"))
    assert await make_gateway(tasks={"reply": TaskModel(temperature=1)}).complete_text("reply", ASK) == "好"


@pytest.mark.parametrize(
    ("refusal", "advised"),
    [
        ("registry.ollama.ai/library/gemma:2b does not support tools", True),
        ('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set', True),
        (
            "Missing `reasoning_content` field in the assistant message at message index 2. For more "
            "information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls",
            False,
        ),
    ],
)
async def test_tools_refused_name_the_setting_to_change(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, refusal: str, advised: bool
) -> None:
    fake_llm.refuse("tools", Fail(400, refusal))
    tools = [{"type": "function", "function": {"name": "recall", "parameters": {"type": "object"}}}]
    with pytest.raises(LLMRefused) as info:
        await make_gateway().chat("reply", ASK, tools=tools)
    assert ("set [tools] enabled = false" in info.value.reason) is advised


@pytest.mark.parametrize(
    ("failure", "advice"),
    [
        (Raw("404: Not Found", content_type="text/plain", status=404), "check base_url"),
        (Fail(401, "Incorrect API key provided: sk-xx***.", code="invalid_api_key"), "the key was refused"),
    ],
)
async def test_a_wrong_base_url_or_key_says_which_setting_to_check(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, sleeps: list[float], failure: Raw | Fail, advice: str
) -> None:
    fake_llm.script(failure)
    with pytest.raises(LLMRefused) as info:
        await make_gateway().complete_text("summary", ASK)
    assert advice in info.value.reason
    assert len(fake_llm.chat_requests) == 1 and sleeps == []


async def test_a_key_the_provider_echoes_in_its_error_is_kept_out_of_the_reason_log_and_ledger(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """A provider (an OpenAI-compatible proxy) answering 401 with the whole key in its message had it
    copied into the failure reason: the log, the ledger's row, `/usage` and `qunyi doctor` showed it."""
    key = "sk-live-0123456789abcdef"
    fake_llm.script(Fail(401, f"Invalid API key: {key} is not valid", code="invalid_api_key"))
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMRefused) as info:
        await make_gateway(api_key=key).complete_text("summary", ASK)
    assert "HTTP 401" in info.value.reason and "is not valid" in info.value.reason
    rows = await usage_rows(db)
    shown = [info.value.reason, str(info.value), caplog.text, *(row.error or "" for row in rows)]
    assert rows and not [text for text in shown if key in text]


async def test_a_models_refusal_field_is_a_refusal_without_a_repair_round(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database
) -> None:
    """OpenAI's safety refusal (`content` null, `refusal` the reason) was read as an empty answer and
    sent back for a repair, which the model refuses again."""
    fake_llm.script(Answer(None, refusal="I'm sorry, I can't help with that."), answer_json(GOOD))
    with pytest.raises(LLMRefused) as info:
        await make_gateway().complete_json("topic", ASK, Topic)
    assert info.value.reason == "the model refused: I'm sorry, I can't help with that."
    assert len(fake_llm.chat_requests) == 1
    assert [row.error for row in await usage_rows(db)] == [info.value.reason]


async def test_a_request_holding_a_lone_surrogate_is_refused_not_raised(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, sleeps: list[float]
) -> None:
    """Text that is not valid Unicode (a lone surrogate, which JSON can carry escaped: in a tool's
    arguments the model wrote, in a stored message) cannot be encoded by the `openai` client: its
    UnicodeEncodeError escaped the gateway, so callers' offline paths (which catch LLMUnavailable)
    never ran and a job failed with a traceback at every turn. It is refused, as a 4xx is."""
    gateway = make_gateway()
    broken = [{"role": "user", "content": "\ud800 周六爬山"}]
    for call in (
        lambda: gateway.complete_json("topic", broken, Topic),
        lambda: gateway.complete_text("summary", broken),
        lambda: gateway.chat("reply", broken),
    ):
        with pytest.raises(LLMRefused) as info:
            await call()
        assert "cannot be encoded" in info.value.reason and "surrogates not allowed" in info.value.reason
    assert fake_llm.chat_requests == [] and sleeps == []


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (Raw("<html>proxy error</html>", content_type="text/html"), "not a chat completion: '<html>"),
        (Raw("{not json"), "the body is not JSON"),
        (Raw("{}"), "choices"),
        (Raw('{"error": {"message": "quota"}}'), "choices"),
        (Raw('[{"choices": []}]'), "not a chat completion: ["),
        (Raw('{"choices": [{"index": 0, "message": null}]}'), "choices.0.message"),
        (Raw('{"choices": [{"message": {"content": 5}}]}'), "choices.0.message.content"),
        (Raw('{"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": "x"}}'), "usage"),
        (Raw('{"choices": [{"message": {"content": "hi"}}], "usage": {"total_tokens": "x"}}'), "usage"),
    ],
)
async def test_a_body_that_is_no_chat_completion_is_unavailable(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database, body: Raw, reason: str
) -> None:
    gateway = make_gateway()
    for call in (
        lambda: gateway.complete_json("topic", ASK, Topic),
        lambda: gateway.complete_text("summary", ASK),
        lambda: gateway.chat("reply", ASK),
    ):
        fake_llm.script(body)
        with pytest.raises(LLMUnavailable) as info:
            await call()
        assert info.value.reason.startswith("unusable response:") and reason in info.value.reason
    assert len(fake_llm.chat_requests) == 3, "neither retried nor sent for repair"
    assert [row.ok for row in await usage_rows(db)] == [False, False, False]


async def test_a_content_filters_empty_answer_is_a_refusal_without_a_repair_round(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """A provider's content filter answering 200 with `"choices": []` was taken for a malformed answer:
    a repair round asked the same again (refused again, tokens spent twice), and the caller got "invalid
    JSON after repair: the response has no choices". It is now LLMRefused at once, saying so (with the
    categories `prompt_filter_results` names), recorded with the tokens the provider reported, or the
    estimated prompt when it reports none, and not retried; the gateway adds no log line of its own."""
    caplog.set_level(logging.DEBUG, logger="bot.llm")
    fake_llm.script(filtered(("hate", "violence"), usage=(57, 0)), filtered())
    gateway = make_gateway()
    with pytest.raises(LLMRefused) as info:
        await gateway.complete_json("topic", ASK, Topic)
    said = "the provider returned no answer (content filter?): the prompt was filtered for hate, violence"
    assert info.value.reason == said
    assert len(fake_llm.chat_requests) == 1, "no repair round, no retry"
    with pytest.raises(LLMRefused) as info:
        await gateway.chat("reply", ASK, tools=[])
    assert info.value.reason == "the provider returned no answer (content filter?)"
    assert len(fake_llm.chat_requests) == 2
    rows = await usage_rows(db)
    assert [(r.task, r.ok, r.error, r.prompt_tokens, r.completion_tokens) for r in rows] == [
        ("topic", False, said, 57, 0),
        ("reply", False, info.value.reason, estimate_tokens(ASK[0]["content"]) + 4, 0),
    ]
    assert (await gateway.ledger.summary())["topic"]["failures"] == 1
    assert not [r for r in caplog.records if r.name.startswith("bot.llm")]


async def _refusal(request: Awaitable[object]) -> str:
    """The reason of the LLMRefused that `request` raises."""
    with pytest.raises(LLMRefused) as info:
        await request
    return info.value.reason


async def test_an_answer_a_content_filter_stopped_is_a_refusal_unless_what_it_kept_is_usable(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database
) -> None:
    """A choice with finish_reason "content_filter" (the filter acting on the answer, not the prompt)
    and nothing in it was taken for a bad answer: a JSON request sent a repair round (stopped again),
    a text request said "empty answer". It is now the refusal an answer without choices is, at once,
    naming the finish reason and the categories the choice's `content_filter_results` marks. What the
    filter kept of a JSON answer is used when it validates; when it does not, that is the same refusal,
    without a repair round (the repair would be stopped at the same point). What it kept of a text
    answer is the same refusal: the reply it would make was sent to the chat cut mid-sentence."""
    stop = "content_filter"
    fake_llm.script(
        Answer(None, finish_reason=stop, filtered=("violence",), usage=(30, 0)),
        Answer("", finish_reason=stop),
        Answer(None, finish_reason=stop),
        answer_json(GOOD, finish_reason=stop),
        Answer('{"title": "周末', finish_reason=stop),
        Answer("周末去爬", finish_reason=stop),
    )
    gateway = make_gateway()
    refusals = [
        await _refusal(gateway.complete_json("topic", ASK, Topic)),
        await _refusal(gateway.complete_text("summary", ASK)),
        await _refusal(gateway.chat("reply", ASK, tools=[])),
    ]
    assert await gateway.complete_json("topic", ASK, Topic) == Topic(**GOOD)
    refusals.append(await _refusal(gateway.complete_json("topic", ASK, Topic)))
    refusals.append(await _refusal(gateway.complete_text("summary", ASK)))
    stopped = "the provider returned no answer (content filter?): finish_reason content_filter"
    assert refusals[:3] == [f"{stopped}: the answer was filtered for violence", stopped, stopped]
    assert refusals[3].startswith(f"{stopped} (invalid JSON")
    assert refusals[4] == f"{stopped} (the text stops where the filter stopped it)"
    assert len(fake_llm.chat_requests) == 6, "one request each: no repair round, no retry"
    rows = await usage_rows(db)
    assert [(row.ok, row.error) for row in rows] == [
        (False, refusals[0]),
        (False, stopped),
        (False, stopped),
        (True, ""),
        (False, refusals[3]),
        (False, refusals[4]),
    ]
    assert (rows[0].prompt_tokens, rows[0].completion_tokens) == (30, 0)


async def test_a_sparse_completion_without_metadata_is_still_read(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    """Servers that leave out id, created, model, index or finish_reason are not refused."""
    fake_llm.script(Raw('{"choices": [{"message": {"content": "你好"}}]}'))
    assert await make_gateway().complete_text("reply", ASK) == "你好"


@pytest.mark.parametrize(
    "refusal",
    [
        "Invalid parameter: response_format of type json_object is not supported",
        "deepseek-reasoner does not support Json Output.",  # DeepSeek's wording names no field
    ],
)
async def test_rejected_response_format_falls_back_and_is_remembered(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, sleeps: list[float], refusal: str
) -> None:
    fake_llm.script(
        Fail(400, refusal),
        answer_json(GOOD),
        answer_json(GOOD),
    )
    gateway = make_gateway()
    assert (await gateway.complete_json("topic", ASK, Topic)).title == GOOD["title"]
    assert (await gateway.complete_json("topic", ASK, Topic)).title == GOOD["title"]
    formats = [request.body.get("response_format") for request in fake_llm.chat_requests]
    assert formats == [{"type": "json_object"}, None, None]
    assert sleeps == []


async def test_json_mode_can_be_turned_off_per_task(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    fake_llm.script(answer_json(GOOD))
    gateway = make_gateway(tasks={"topic": TaskModel(json_mode=False, temperature=0.1, max_tokens=64)})
    await gateway.complete_json("topic", ASK, Topic)
    [request] = fake_llm.chat_requests
    assert "response_format" not in request.body
    assert (request.body["temperature"], request.body["max_tokens"]) == (0.1, 64)


async def test_tokens_are_recorded_per_task(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database, clock: ManualClock
) -> None:
    fake_llm.script(
        answer_json(GOOD, usage=(120, 30)),
        Answer("一段摘要", usage=(200, 50)),
        Answer("没有用量的回答" * 4, usage=None),
    )
    gateway = make_gateway()
    await gateway.complete_json("topic", ASK, Topic)
    await gateway.complete_text("summary", ASK)
    await gateway.complete_text("jargon", ASK)
    since = clock.now() - timedelta(hours=1)
    assert await gateway.ledger.used("topic", since) == 150
    assert await gateway.ledger.used("summary", since) == 250
    rows = await usage_rows(db)
    assert [(row.task, row.model) for row in rows] == [
        ("topic", "fake-model"),
        ("summary", "fake-model"),
        ("jargon", "fake-model"),
    ]
    # No usage from the server: estimated from the texts (28 CJK characters answered).
    assert rows[2].completion_tokens == 28 and rows[2].prompt_tokens > 0
    summary = await gateway.ledger.summary()
    assert summary["summary"]["hour"] == 250 and summary["summary"]["calls"] == 1


def _completion(message: dict[str, Any], usage: dict[str, int] | None) -> Raw:
    body: dict[str, Any] = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    return Raw(json.dumps(body if usage is None else {**body, "usage": usage}, ensure_ascii=False))


async def test_a_usage_of_a_total_alone_or_none_at_all_is_counted_with_the_reasoning(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database
) -> None:
    """A server sending only `total_tokens` had its count ignored for an estimate; one sending no usage
    had a thinking model's `reasoning_content` (charged as completion) left out of the estimate."""
    thought = "先想一想这个问题。" * 200
    fake_llm.script(
        _completion({"role": "assistant", "content": "好"}, {"total_tokens": 777}),
        _completion({"role": "assistant", "content": "好", "reasoning_content": thought}, None),
    )
    gateway = make_gateway()
    assert await gateway.complete_text("reply", ASK) == "好"
    assert await gateway.complete_text("reply", ASK) == "好"
    total, estimated = await usage_rows(db)
    assert total.prompt_tokens + total.completion_tokens == 777
    assert estimated.completion_tokens >= estimate_tokens(thought)


async def test_a_server_reporting_more_tokens_than_sqlite_stores_is_counted_at_the_most(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database, clock: ManualClock
) -> None:
    """A server reporting 10**30 prompt tokens: the answer came back, but writing the count raised
    OverflowError out of the request, the row stayed held and failed every later write (shutdown's
    too). The request is now counted at `MAX_REQUEST_TOKENS`, and later requests are recorded."""
    fake_llm.script(Answer("好的", usage=(10**30, 5)), Answer("再来", usage=(7, 3)))
    gateway = make_gateway()
    assert await gateway.complete_text("reply", ASK) == "好的"
    assert await gateway.complete_text("summary", ASK) == "再来"
    await gateway.close()
    rows = await usage_rows(db)
    assert [(row.task, row.prompt_tokens, row.completion_tokens) for row in rows] == [
        ("reply", MAX_REQUEST_TOKENS, 5),
        ("summary", 7, 3),
    ]
    assert await gateway.ledger.used("reply", clock.now() - timedelta(hours=1)) == MAX_REQUEST_TOKENS + 5


async def mine_jargon_job(gateway: LLMGateway, terms: list[str]) -> tuple[str, dict[str, str]]:
    """A miniature background job: infer meanings with the LLM, or fall back to an offline guess."""

    class Meanings(BaseModel):
        meanings: dict[str, str]

    log = logging.getLogger("tests.jargon_job")
    if gateway.available("jargon"):
        try:
            answer = await gateway.complete_json(
                "jargon", [{"role": "user", "content": "解释这些词：" + "、".join(terms)}], Meanings
            )
            return "llm", answer.meanings
        except LLMUnavailable as exc:
            log.info("jargon: LLM step skipped (%s); offline path", exc.reason)
    else:
        log.info("jargon: LLM step skipped (%s); offline path", gateway.unavailable_reason("jargon"))
    return "offline", {term: "" for term in terms}


async def test_budget_cap_makes_the_job_fall_back_offline(
    fake_llm: FakeOpenAI,
    make_gateway: GatewayFactory,
    clock: ManualClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    fake_llm.default = lambda _body: answer_json({"meanings": {"yyds": "永远的神"}}, usage=(80, 40))
    gateway = make_gateway(budgets={"jargon": Budget(tokens_per_hour=100)})

    assert await mine_jargon_job(gateway, ["yyds"]) == ("llm", {"yyds": "永远的神"})
    assert gateway.available("jargon") is False
    assert gateway.available("topic") is True
    reason = gateway.unavailable_reason("jargon")
    assert reason == "over budget: jargon: 120 tokens in the last hour, cap 100"

    for _ in range(3):
        assert await mine_jargon_job(gateway, ["yyds"]) == ("offline", {"yyds": ""})
    with pytest.raises(LLMUnavailable) as info:
        await gateway.complete_json("jargon", ASK, Topic)
    assert info.value.reason == reason
    assert len(fake_llm.chat_requests) == 1  # nothing sent while over budget
    assert "falls back to its offline path: jargon: 120 tokens" in caplog.text
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "budget" in r.getMessage()]
    assert len(warnings) == 1  # once per episode, not once per call
    assert "jargon: LLM step skipped (over budget" in caplog.text

    clock.advance(timedelta(hours=1, minutes=1))
    assert gateway.available("jargon") is True
    assert (await mine_jargon_job(gateway, ["yyds"]))[0] == "llm"


async def test_concurrent_requests_cannot_all_pass_the_budget_check(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database
) -> None:
    """Each answer costs 120 tokens; four at once against a cap of 300 used to send all four (480)."""
    fake_llm.default = lambda _body: Delay(0.3, Answer('{"title": "爬山", "keywords": []}', usage=(80, 40)))
    gateway = make_gateway(
        tasks={"topic": TaskModel(max_tokens=50)}, budgets={"topic": Budget(tokens_per_hour=300)}
    )

    async def ask() -> str:
        try:
            return (await gateway.complete_json("topic", ASK, Topic)).title
        except LLMUnavailable as exc:
            return exc.reason

    answers = await asyncio.gather(*(ask() for _ in range(4)))
    async with db.read() as session:
        rows = (await session.scalars(select(LlmUsage))).all()
    spent = sum(r.prompt_tokens + r.completion_tokens for r in rows)
    assert spent <= 300 + 120, "the cap is overshot by at most one request"
    assert answers.count("爬山") == len(fake_llm.chat_requests) >= 1
    refused = [a for a in answers if a != "爬山"]
    assert refused and all("reserved by requests in flight" in a for a in refused)
    assert gateway._in_flight == {}, "every reservation is released"


async def test_refresh_picks_up_spending_recorded_elsewhere(make_gateway: GatewayFactory) -> None:
    gateway = make_gateway(budgets={"person": Budget(tokens_per_day=10)})
    assert gateway.available("person")
    await gateway.ledger.record("person", "fake-model", 8, 8, ok=True)
    assert gateway.available("person")  # the cached verdict is still the old one
    await gateway.refresh()
    assert not gateway.available("person")


async def test_disabled_sends_nothing(fake_llm: FakeOpenAI, make_gateway: GatewayFactory) -> None:
    gateway = make_gateway(enabled=False)
    assert gateway.available("reply") is False
    for call in (
        gateway.complete_json("topic", ASK, Topic),
        gateway.complete_text("reply", ASK),
        gateway.chat("reply", ASK),
    ):
        with pytest.raises(LLMUnavailable) as info:
            await call
        assert "disabled" in info.value.reason
    assert fake_llm.requests == []


@pytest.mark.parametrize(
    ("overrides", "task", "reason"),
    [
        ({"model": ""}, "topic", "no model configured"),
        ({"base_url": ""}, "topic", "no base_url configured"),
        ({"tasks": {"person": TaskModel(enabled=False)}}, "person", "task disabled"),
        ({}, "weather", "no settings for task 'weather'"),
    ],
)
async def test_unconfigured_tasks_are_unavailable(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, overrides: dict[str, Any], task: str, reason: str
) -> None:
    gateway = make_gateway(**overrides)
    assert not gateway.available(task)
    with pytest.raises(LLMUnavailable, match=reason):
        await gateway.complete_text(task, ASK)
    assert fake_llm.requests == []


async def test_concurrency_limit_is_respected(fake_llm: FakeOpenAI, make_gateway: GatewayFactory) -> None:
    fake_llm.default = lambda _body: Delay(0.1, Answer("ok"))
    gateway = make_gateway(concurrency=2)
    answers = await asyncio.gather(*(gateway.complete_text("summary", ASK) for _ in range(6)))
    assert answers == ["ok"] * 6
    assert fake_llm.max_in_flight == 2


async def test_api_key_comes_from_the_environment(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUNYI_LLM_API_KEY", "sk-from-env")
    monkeypatch.setenv("JARGON_KEY", "sk-jargon")
    gateway = make_gateway(api_key="", tasks={"jargon": TaskModel(api_key_env="JARGON_KEY")})
    await gateway.complete_text("reply", ASK)
    await gateway.complete_text("jargon", ASK)
    keys = [request.headers["Authorization"] for request in fake_llm.chat_requests]
    assert keys == ["Bearer sk-from-env", "Bearer sk-jargon"]


async def test_chat_returns_tool_calls_for_the_tool_loop(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "recall",
                "description": "search memory",
                "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
            },
        }
    ]
    fake_llm.script(Answer(None, tool_calls=[tool_call("recall", {"query": "上周爬山"}, "call_1")]))
    reply = await make_gateway().chat("reply", ASK, tools=tools)
    assert reply.content is None and reply.finish_reason == "tool_calls"
    [call] = reply.tool_calls
    assert (call.id, call.name, call.parsed_arguments()) == ("call_1", "recall", {"query": "上周爬山"})
    twice = json.dumps(json.dumps({"query": "上周爬山"}, ensure_ascii=False), ensure_ascii=False)
    fake_llm.script(Answer(None, tool_calls=[tool_call("recall", twice, "call_2")]))
    [call] = (await make_gateway().chat("reply", ASK, tools=tools)).tool_calls
    assert (call.arguments, call.parsed_arguments()) == (twice, {"query": "上周爬山"}), "read once more"
    assert fake_llm.chat_requests[0].body["tools"] == tools
    assert reply.as_message() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "recall", "arguments": '{"query": "上周爬山"}'},
            }
        ],
    }


async def test_tool_calls_without_ids_or_with_repeated_ones_get_ids_of_their_own(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    """A server leaving tool call ids out (or empty, or repeating one): they went back in the next
    request as `null` and the tool results matched no call or the wrong one, which a strict endpoint
    refuses with HTTP 400, the message left unanswered. Each call now has an id of its own."""
    calls = [{"type": "function", "function": {"name": name, "arguments": "{}"}} for name in "abcde"]
    for call, call_id in zip(calls, [None, "", "same", "same", "call_0"], strict=True):
        if call_id is not None:
            call["id"] = call_id
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    choice = {"index": 0, "finish_reason": "tool_calls", "message": message}
    fake_llm.script(
        Raw(json.dumps({"id": "x", "object": "chat.completion", "created": 1, "choices": [choice]}))
    )
    reply = await make_gateway().chat("reply", ASK, tools=[])
    ids = [call["id"] for call in reply.as_message()["tool_calls"]]
    assert ids == ["call_0_", "call_1", "same", "call_3", "call_0"]


async def test_tool_call_arguments_sent_as_an_object_are_read_as_json_text(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, db: Database
) -> None:
    """Some servers send a tool call's arguments as the object itself, not JSON text: the whole reply
    was refused as "not a chat completion" and the message left unanswered."""
    call = {"id": "c1", "type": "function", "function": {"name": "recall", "arguments": {"query": "爬山"}}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    choice = {"index": 0, "finish_reason": "tool_calls", "message": message}
    fake_llm.script(
        Raw(json.dumps({"id": "x", "object": "chat.completion", "created": 1, "choices": [choice]}))
    )
    [call_read] = (await make_gateway().chat("reply", ASK, tools=[])).tool_calls
    assert (call_read.name, call_read.arguments) == ("recall", '{"query": "爬山"}')
    [row] = await usage_rows(db)
    assert row.ok and row.completion_tokens > 0


async def test_text_answers_lose_reasoning_blocks_and_empty_ones_fail(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    fake_llm.script(Answer("<think>想一想</think>\n好呀"), Answer("<think>只想不说</think>"))
    gateway = make_gateway()
    assert await gateway.complete_text("reply", ASK) == "好呀"
    with pytest.raises(LLMUnavailable, match="empty answer"):
        await gateway.complete_text("reply", ASK)


async def test_unreachable_server_is_retried_then_unavailable(
    make_gateway: GatewayFactory, sleeps: list[float]
) -> None:
    async with FakeOpenAI() as gone:
        url = gone.base_url
    gateway = make_gateway(base_url=url, max_retries=1)
    with pytest.raises(LLMUnavailable, match="connection failed"):
        await gateway.complete_text("reply", ASK)
    assert len(sleeps) == 1


async def test_report_shows_models_reasons_and_usage_for_doctor(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    fake_llm.script(Answer("ok", usage=(60, 60)))
    gateway = make_gateway(
        budgets={"topic": Budget(tokens_per_hour=100)},
        tasks={"person": TaskModel(enabled=False), "jargon": TaskModel(model="small")},
    )
    await gateway.complete_text("topic", ASK)
    report = await gateway.report()
    assert set(report) == {"reply", "topic", "summary", "jargon", "person"}
    assert report["topic"]["unavailable_reason"] == "over budget: topic: 120 tokens in the last hour, cap 100"
    assert report["topic"]["usage"] is not None and report["topic"]["usage"]["hour"] == 120
    assert report["person"]["unavailable_reason"] == "task disabled ([llm.tasks.person] enabled = false)"
    assert report["jargon"]["model"] == "small" and report["jargon"]["unavailable_reason"] is None
    assert report["reply"]["base_url"] == fake_llm.base_url


async def test_reconfigure_applies_reloaded_budgets_models_and_limits(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory
) -> None:
    fake_llm.default = lambda _body: Delay(0.05, Answer("ok", usage=(30, 30)))
    gateway = make_gateway(concurrency=4)
    await gateway.complete_text("summary", ASK)
    assert gateway.available("summary")
    tighter = gateway.settings.model_copy(
        update={"model": "other-model", "concurrency": 1, "budgets": {"summary": Budget(tokens_per_hour=50)}}
    )
    gateway.reconfigure(tighter)
    await gateway.refresh()
    assert not gateway.available("summary")
    await asyncio.gather(*(gateway.complete_text("topic", ASK) for _ in range(3)))
    assert fake_llm.chat_requests[-1].body["model"] == "other-model"
    assert fake_llm.max_in_flight == 1


async def test_the_model_requests_are_not_logged_one_line_each_at_info(
    fake_llm: FakeOpenAI, make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """httpx (the openai client's copy, `httpx2`) logged "HTTP Request: POST …" at INFO for every model call:
    a replay with a model printed one line per call."""
    root = logging.getLogger()
    before = root.level
    try:
        for level, logged in (("INFO", False), ("DEBUG", True)):
            set_log_level(level)
            caplog.clear()
            fake_llm.script(answer_json(GOOD))
            await make_gateway().complete_json("topic", ASK, Topic)
            shown = [r for r in caplog.records if r.name in CHATTY_LOGGERS and "HTTP" in r.getMessage()]
            assert bool(shown) is logged, level
    finally:
        root.setLevel(before)
        for name in CHATTY_LOGGERS:
            logging.getLogger(name).setLevel(logging.NOTSET)
