import asyncio
import socket
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select

from bot.app import build_app
from bot.cli.doctor import Check, embedder_check, run_checks
from bot.cli.main import cli
from bot.config import ConfigStore
from bot.config.loader import parse_settings
from bot.llm.gateway import build_gateway
from memory.clock import SystemClock
from memory.models import Chat, ChatHistory, Jargon, PersonLlmGap
from memory.ports import LLMRefused
from memory.storage import Database
from memory.storage.tables import FTS_TABLES
from tasks.fts_reindex import JOB_NAME as REINDEX_JOB
from tests.bot.web.conftest import history_row
from tests.conftest import T0, make_message
from tests.fakes.openai_server import Answer, Fail, FakeOpenAI
from tests.memory.storage.test_migrations import schema_at
from tests.memory.test_reindex import make_old


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_database(data_dir: Path) -> None:
    async def create() -> None:
        await (await Database.open(data_dir)).close()

    asyncio.run(create())


def doctor(data_dir: Path) -> Result:
    return CliRunner().invoke(cli, ["doctor", "--data-dir", str(data_dir)], env={"COLUMNS": "250"})


def test_doctor_on_the_offline_default(tmp_path: Path) -> None:
    make_database(tmp_path)
    result = doctor(tmp_path)
    assert result.exit_code == 0, result.output
    assert "[llm] enabled = false" in result.output
    assert "tool definitions" in result.output and "limit 500" in result.output


def test_doctor_warns_of_a_data_directory_others_may_read(tmp_path: Path) -> None:
    """Found by QA pass 17 (security): a data directory made before folders were made private keeps
    its 0755, every local user reading every chat's messages, and nothing said so."""
    data = tmp_path / "data"
    make_database(data)
    data.chmod(0o755)
    result = doctor(data)
    assert result.exit_code == 0, result.output
    assert f"{data} is mode 0755: other local users may read" in result.output
    assert f"chmod 700 {data}" in result.output
    data.chmod(0o700)
    assert "data directory" not in doctor(data).output


def test_doctor_names_an_unreachable_endpoint_and_fails(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[llm]\nenabled = true\nbase_url = "http://127.0.0.1:{free_port()}/v1"\nmodel = "m"\n',
        encoding="utf-8",
    )
    make_database(tmp_path / "d")
    args = ["doctor", "--config", str(config), "--data-dir", str(tmp_path / "d")]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "250"})
    assert result.exit_code == 1
    assert "unreachable" in result.output and "llm:reply" in result.output


def test_doctor_reports_a_missing_database_and_does_not_create_it(tmp_path: Path) -> None:
    result = doctor(tmp_path / "typo_dir")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "│ database         │ fail   │ no database in" in result.output
    assert "[llm] enabled = false" in result.output and "tool definitions" in result.output
    assert not (tmp_path / "typo_dir").exists()


def test_doctor_reports_a_corrupt_database_as_a_failed_check(tmp_path: Path) -> None:
    (tmp_path / "qunyi.db").write_bytes(b"not a sqlite database" * 10)
    result = doctor(tmp_path)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert f"│ database         │ fail   │ cannot open {tmp_path / 'qunyi.db'}: file is not a database" in (
        result.output
    )


def test_doctor_reports_an_older_schema_as_behind_and_does_not_upgrade_it(tmp_path: Path) -> None:
    """doctor opened the database as every command did, upgrading it: it then always said "up to date",
    and upgraded the schema under a bot of the version before that may still be running on it."""
    database = tmp_path / "qunyi.db"
    with schema_at(database, "0015_embeddings_chat_space"):
        pass
    before = database.read_bytes()
    result = CliRunner().invoke(cli, ["doctor", "--data-dir", str(tmp_path)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if "│ database " in line)
    assert "│ warn   │" in line
    assert (
        f"{database} (schema behind, upgraded at the next start, newest 0015_embeddings_chat_space; this "
        "version's newest is "
    ) in line
    assert "its contents are checked after the upgrade" in line
    assert database.read_bytes() == before


def doctor_with(tmp_path: Path, config_text: str) -> Result:
    config = tmp_path / "config.toml"
    config.write_text(config_text, encoding="utf-8")
    make_database(tmp_path / "d")
    args = ["doctor", "--config", str(config), "--data-dir", str(tmp_path / "d")]
    return CliRunner().invoke(cli, args, env={"COLUMNS": "250"})


def test_doctor_says_a_local_embedder_misses_its_package(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    result = doctor_with(tmp_path, '[recall]\nembedder = "local"\n')
    assert result.exit_code == 1, result.output
    assert "embedder" in result.output and "sentence-transformers is not installed" in result.output


def test_doctor_says_a_local_embedder_model_folder_is_missing(tmp_path: Path) -> None:
    result = doctor_with(tmp_path, '[recall]\nembedder = "local"\nmodel = "./no-such-model"\n')
    assert result.exit_code == 1, result.output
    assert "'./no-such-model' does not exist" in result.output


def test_doctor_checks_an_openai_embedder_endpoint(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = doctor_with(tmp_path, f'[recall]\nembedder = "openai"\nbase_url = "{url}"\nmodel = "e"\n')
    assert result.exit_code == 1, result.output
    assert "embedder" in result.output and "/v1/embeddings unreachable" in result.output


async def test_an_openai_embedder_answering_passes_the_check(tmp_path: Path) -> None:
    async with FakeOpenAI() as server:
        text = f'[recall]\nembedder = "openai"\nbase_url = "{server.base_url}"\nmodel = "e"\n'
        check = await embedder_check(parse_settings(text, "c", env={}))
    assert check.status == "ok", check
    none = await embedder_check(parse_settings("", "c", env={}))
    assert none.status == "info" and "lexical" in none.detail


async def test_an_openai_embedder_refusing_every_embedding_fails_the_check(tmp_path: Path) -> None:
    """A base_url without /v1 (or a wrong key) answers GET /models with a 404 (or 401), which passed
    as reachable while the backfill failed at every turn."""
    async with FakeOpenAI() as server:
        wrong = server.base_url.removesuffix("/v1")
        text = f'[recall]\nembedder = "openai"\nbase_url = "{wrong}"\nmodel = "e"\n'
        check = await embedder_check(parse_settings(text, "c", env={}))
    assert check.status == "fail" and f"{wrong}/embeddings answered 404" in check.detail, check


def test_doctor_shows_a_zero_token_cap_as_zero_not_as_no_cap(tmp_path: Path) -> None:
    """A cap of 0 (the task may spend nothing) was shown as "cap ∞", next to the reason saying cap 0."""
    text = (
        f'[llm]\nenabled = true\nbase_url = "http://127.0.0.1:{free_port()}/v1"\nmodel = "m"\n'
        "[llm.budgets.jargon]\ntokens_per_hour = 0\n"
    )
    result = doctor_with(tmp_path, text)
    [jargon] = [line for line in result.output.splitlines() if "llm:jargon" in line]
    assert "over budget" in jargon and "0 tokens/h (cap 0), 0/day (cap ∞)" in jargon, jargon


async def test_doctor_counts_cancelled_requests_among_a_tasks_failures(tmp_path: Path) -> None:
    """A request cancelled while awaited leaves a row marked cancelled (bot.llm.usage)."""
    await asyncio.to_thread(make_database, tmp_path / "d")
    with sqlite3.connect(tmp_path / "d" / "qunyi.db") as db:
        db.executemany(
            "INSERT INTO llm_usage (task, model, prompt_tokens, completion_tokens, ok, error, time, "
            "cancelled) VALUES ('reply', 'm', ?, 0, ?, '', ?, ?)",
            [(120, 0, time.time(), 1), (30, 1, time.time(), 0)],
        )
    async with FakeOpenAI() as server:
        config = f'[llm]\nenabled = true\nbase_url = "{server.base_url}"\nmodel = "m"\n'
        result = await asyncio.to_thread(doctor_with, tmp_path, config)  # the database is only opened
    [reply] = [line for line in result.output.splitlines() if "llm:reply" in line]
    assert "150 tokens/h" in reply and "1 failures (1 cancelled)" in reply, reply


async def test_doctor_shows_why_a_task_whose_last_request_failed_fails(tmp_path: Path) -> None:
    """A spent quota, a wrong key or a base_url missing /v1 fail every request, while the endpoint
    answers GET /models: doctor said `ok` with "N failures", and the reason was in the log alone."""
    await asyncio.to_thread(make_database, tmp_path / "d")
    async with FakeOpenAI() as server:
        config = f'[llm]\nenabled = true\nbase_url = "{server.base_url}"\nmodel = "m"\nmax_retries = 0\n'
        settings = parse_settings(config, "c", env={}).llm
        db = await Database.open(tmp_path / "d")
        gateway = build_gateway(settings, db, SystemClock())
        quota = "You exceeded your current quota, please check your plan and billing details."
        server.script(
            Fail(429, quota, code="insufficient_quota"),
            Answer("好"),
            Fail(429, quota, code="insufficient_quota"),
        )
        with pytest.raises(LLMRefused):
            await gateway.complete_text("summary", [{"role": "user", "content": "总结"}])
        assert await gateway.complete_text("summary", [{"role": "user", "content": "总结"}]) == "好"
        with pytest.raises(LLMRefused):
            await gateway.complete_text("reply", [{"role": "user", "content": "你好"}])
        await gateway.close()
        await db.close()
        result = await asyncio.to_thread(doctor_with, tmp_path, config)
    lines = result.output.splitlines()
    [reply] = [line for line in lines if "llm:reply" in line]
    [summary] = [line for line in lines if "llm:summary" in line]
    assert "warn" in reply and "its last request failed: HTTP 429: the provider's quota" in reply, reply
    assert "ok" in summary and "last request failed" not in summary, "its last request was answered"


async def add_offline_work(db: Database) -> int:
    """Work left for a model in a new chat, whose id is returned: 3 topics packed offline (1 tried with
    its messages as they are; 1 tried before they changed, so due again) and one the model digested;
    2 person chunks (1 tried); 2 jargon terms past a default threshold since their last inference, and 4
    that are not (between thresholds, approved, added by hand, past the last threshold)."""
    async with db.write() as session:
        chat = Chat(platform="test", platform_chat_id="offline", created_at=T0.timestamp())
        session.add(chat)
        await session.flush()
        session.add_all(history_row(chat.id, f"t{n}", count=1) for n in range(4))
        await session.flush()
        rows = (await session.scalars(select(ChatHistory).order_by(ChatHistory.id))).all()
        rows[0].digest_tried = [1, 2]
        rows[1].digest_tried = [1]
        rows[3].provenance = "llm"
        session.add_all(
            PersonLlmGap(chat_id=chat.id, message_ids=[1], time=T0.timestamp(), tried=tried)
            for tried in (False, True)
        )
        stamp = T0.timestamp()
        for n, (count, last, status, provenance) in enumerate(
            [
                (5, 0, "candidate", "mined"),  # crossed 4
                (9, 4, "inferred", "inferred"),  # crossed 8
                (7, 4, "candidate", "mined"),  # nothing crossed since 4
                (5, 0, "approved", "mined"),
                (5, 0, "candidate", "manual"),
                (150, 100, "candidate", "mined"),  # past the last threshold
            ]
        ):
            session.add(
                Jargon(
                    content=f"词{n}", normalized=f"词{n}", count=count, last_inference_count=last,
                    status=status, provenance=provenance, created_at=stamp, updated_at=stamp,
                )
            )  # fmt: skip
    return chat.id


async def offline_work_detail(tmp_path: Path, config_text: str) -> Check:
    """The doctor's offline-work check on a database holding `add_offline_work`'s rows."""
    config = tmp_path / "config.toml"
    config.write_text(config_text, encoding="utf-8")
    app = await build_app(ConfigStore.load(config), tmp_path / "d", watch_config=False)
    try:
        await add_offline_work(app.db)
        [found] = [c for c in await run_checks(app) if c.name == "offline work"]
    finally:
        await app.close()
    return found


async def test_doctor_counts_the_work_left_for_a_model_and_why_its_job_does_not_run(tmp_path: Path) -> None:
    found = await offline_work_detail(tmp_path, "")
    assert found.status == "info", "the model is off by choice: nothing to warn about"
    assert found.detail == (
        "topics packed offline, to re-digest 3 (1 tried) — history_redigest cannot do it: "
        "[topics] llm_summary = false; "
        "people's message chunks read offline, to relearn 2 (1 tried) — person_relearn cannot do it: "
        "the person model: LLM disabled ([llm] enabled = false); "
        "jargon terms due for inference 2 — jargon_mining cannot do it: "
        "the jargon model: LLM disabled ([llm] enabled = false)"
    )


async def test_doctor_warns_when_a_setting_stops_a_job_the_model_is_meant_for(tmp_path: Path) -> None:
    config = (
        f'[llm]\nenabled = true\nbase_url = "http://127.0.0.1:{free_port()}/v1"\n'
        '[llm.tasks.person]\nmodel = "m"\n[llm.tasks.summary]\nmodel = "m"\n'
        "[topics]\nllm_summary = true\nredigest_per_run = 0\n"
    )
    found = await offline_work_detail(tmp_path, config)
    assert found.status == "warn"
    assert found.detail == (
        "topics packed offline, to re-digest 3 (1 tried) — history_redigest cannot do it: "
        "[topics] redigest_per_run = 0; "
        "people's message chunks read offline, to relearn 2 (1 tried); "
        "jargon terms due for inference 2 — jargon_mining cannot do it: the jargon model: no model configured"
    )


def test_doctor_says_nothing_waits_for_a_model_on_a_new_database(tmp_path: Path) -> None:
    make_database(tmp_path)
    result = CliRunner().invoke(cli, ["doctor", "--data-dir", str(tmp_path)], env={"COLUMNS": "250"})
    [line] = [line for line in result.output.splitlines() if "offline work" in line]
    assert "│ ok     │ nothing waits for a model" in line, line


def test_doctor_names_tables_dropped_from_a_database_of_the_current_schema(tmp_path: Path) -> None:
    """A table dropped by hand passed the schema revision check: doctor said ok with the jargon table
    gone, and showed raw SQL with the full-text index gone (found by the QA pass)."""
    make_database(tmp_path)
    with sqlite3.connect(tmp_path / "qunyi.db") as con:
        con.execute("DROP TABLE jargon")
        con.execute("DROP TABLE messages_fts")
    result = doctor(tmp_path)
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "tables missing: jargon, messages_fts;" in said and "[SQL:" not in said, result.output


def test_a_freshly_made_database_misses_no_table_and_lists_every_full_text_index(tmp_path: Path) -> None:
    make_database(tmp_path)
    with sqlite3.connect(tmp_path / "qunyi.db") as con:
        virtual = {
            name
            for (name,) in con.execute(
                "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%'"
            )
        }
    assert virtual == set(FTS_TABLES)
    result = doctor(tmp_path)
    assert result.exit_code == 0 and "tables missing" not in result.output, result.output


async def test_doctor_shows_a_pending_reindex_as_offline_work_until_the_bots_job_did_it(
    tmp_path: Path,
) -> None:
    """A database indexed by an older tokenizer: its rows to re-index are offline work, as long as they
    wait; the bot's re-index job does them (from the cursor, in batches) and the check is ok again."""
    app = await build_app(ConfigStore.load(None), tmp_path, watch_config=False)
    try:
        await app.memory.record_many([make_message(n, text=f"第{n}条：晚上要冲塔") for n in range(1, 4)])
        await make_old(app.db)
        [found] = [c for c in await run_checks(app) if c.name == "offline work"]
        assert found.status == "info"
        assert found.detail.endswith("full-text rows indexed by an older tokenizer, to re-index 6"), (
            "3 messages and their 3 turn windows"
        )
        assert await app.runner.run_job(REINDEX_JOB)
        [found] = [c for c in await run_checks(app) if c.name == "offline work"]
        assert (found.status, found.detail) == ("ok", "nothing waits for a model")
    finally:
        await app.close()
