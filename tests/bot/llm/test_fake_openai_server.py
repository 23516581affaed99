"""The fake server itself, driven by the real openai client: embeddings and request handling."""

from __future__ import annotations

import math

import openai
import pytest

from tests.fakes.openai_server import FakeOpenAI, embed_text


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_embeddings_are_deterministic_unit_vectors_with_lexical_similarity(
    fake_llm: FakeOpenAI,
) -> None:
    client = openai.AsyncOpenAI(base_url=fake_llm.base_url, api_key="k", max_retries=0)
    try:
        texts = ["周末去爬山吗", "周末爬山去不去", "deploy the server tonight"]
        first = await client.embeddings.create(model="fake-embed", input=texts, dimensions=32)
        again = await client.embeddings.create(model="fake-embed", input=texts[0], dimensions=32)
        floats = await client.embeddings.create(model="fake-embed", input=texts[0], encoding_format="float")
    finally:
        await client.close()
    vectors = [item.embedding for item in first.data]
    assert all(len(vector) == 32 for vector in vectors)
    assert all(math.isclose(math.sqrt(cosine(v, v)), 1.0, rel_tol=1e-5) for v in vectors)
    assert again.data[0].embedding == pytest.approx(vectors[0], abs=1e-6)
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
    assert len(floats.data[0].embedding) == fake_llm.embedding_dimension
    assert floats.data[0].embedding == pytest.approx(embed_text(texts[0], fake_llm.embedding_dimension))


async def test_default_handler_sees_the_request_and_requests_are_recorded(fake_llm: FakeOpenAI) -> None:
    fake_llm.default = lambda body: "echo: " + body["messages"][-1]["content"]
    client = openai.AsyncOpenAI(base_url=fake_llm.base_url, api_key="k", max_retries=0)
    try:
        answer = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "你好"}]
        )
        with pytest.raises(openai.BadRequestError):
            await client.chat.completions.create(model="m", messages=[])
    finally:
        await client.close()
    assert answer.choices[0].message.content == "echo: 你好"
    assert answer.usage is not None and answer.usage.prompt_tokens == 1
    assert [request.body["messages"] for request in fake_llm.chat_requests] == [
        [{"role": "user", "content": "你好"}],
        [],
    ]
