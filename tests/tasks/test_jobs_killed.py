"""`qunyi replay` killed (SIGKILL) while a job waits on the model, then replayed again: nothing is lost,
nothing is written twice, and the work the killed job had in hand is redone, not skipped.

Each case holds one request of one model task on the fake OpenAI-compatible server and kills the process
once the server has it (never after a sleep): the topic check placing a batch, packing a topic into
ChatHistory, jargon inference between its second and third call, person consolidation. The restart is
the same replay (a replayed log adds nothing twice) and its settling time, in which every job catches up.
What it leaves is compared with one replay of the same log never killed."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory.persons.consolidate import JOB as PERSON_JOB
from memory.topics.check import JOB as TOPIC_JOB
from tests.fakes.openai_server import Behaviour, FakeOpenAI, Hold, answer_json, llm_toml

ROOT = Path(__file__).resolve().parents[2]
START = datetime(2026, 3, 1, 4, 0, tzinfo=UTC)
# One answer every task's schema accepts (extra keys are ignored): the jargon steps find a meaning that
# differs from the usual one, the summary a theme, the person and topic tasks nothing of their own (the
# offline paths place and find the rest).
ANSWER = {
    "theme": "周末爬山",
    "keywords": ["爬山"],
    "summary": "大家约周末去九溪爬山",
    "key_points": [],
    "no_information": False,
    "meaning": "形容非常好",
    "same": False,
    "facts": [],
    "events": [],
    "topics": [],
}
TOPICS = [  # four topics, each four messages two minutes apart, an hour and a half between topics
    ["周末去九溪爬山吧", "绝绝子 九溪好看", "我住在杭州，周末喜欢爬山", "九溪爬山记得带水"],
    ["午饭吃黄焖鸡还是兰州拉面", "拉面绝绝子", "拉面吧，黄焖鸡太咸", "那就兰州拉面"],
    ["明天的会议改到下午三点", "我是程序员，在西湖边上班", "收到，下午三点开会", "会议室在三楼"],
    ["晚上看电影吗", "新上的片子绝绝子", "几点的场次", "七点半那场"],
]
TEXTS = [text for topic in TOPICS for text in topic]


def _log(path: Path) -> Path:
    lines = [
        {
            "chat": "g1",
            "message_id": f"m{n}",
            "sender_id": f"u{n % 4}",
            "sender_name": f"成员{n % 4}",
            "time": (START + timedelta(minutes=90 * t + 2 * i)).isoformat(),
            "text": text,
        }
        for t, topic in enumerate(TOPICS)
        for i, text in enumerate(topic)
        for n in [4 * t + i + 1]
    ]
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


def _config(path: Path, base_url: str, forgetting: bool = True) -> Path:
    path.write_text(
        llm_toml(base_url)
        + f"""[llm.tasks.reply]
enabled = false
[llm.tasks.topic]
model = "topic"
[llm.tasks.summary]
model = "summary"
[llm.tasks.jargon]
model = "jargon"
[llm.tasks.person]
model = "person"
[topics]
batch_size = 6
min_messages = 3
llm_topics = true
llm_summary = true
pack_after_quiet_minutes = 60.0
[jargon]
min_new_messages = 6
min_df = 2
min_lift = 0.0
thresholds = [2, 4]
[persons]
consolidation_interval_seconds = 1800.0
[forgetting]
enabled = {"true" if forgetting else "false"}
stage_ages_minutes = [30.0, 60.0, 90.0, 120.0]
stage_shares = [0.25, 0.0, 0.0, 0.0]
small_cohort = "faithful"
[logging]
level = "WARNING"
""",
        encoding="utf-8",
    )
    return path


async def _replay(log: Path, config: Path, data: Path) -> asyncio.subprocess.Process:
    return await _python(
        *("-m", "bot.cli.main", "replay", str(log), "--no-progress", "--settle-minutes", "600"),
        *("--config", str(config), "--data-dir", str(data)),
    )


async def _python(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )


async def _replayed(log: Path, config: Path, data: Path) -> None:
    await _ended(await _replay(log, config, data))


async def _ended(process: asyncio.subprocess.Process, code: int = 0) -> str:
    out, _ = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == code and b"Traceback" not in out, out.decode()
    return out.decode()


@dataclass(frozen=True)
class State:
    """What the database holds, as the invariants read it."""

    messages: list[str]  # platform message ids, in id order
    cursors: dict[str, int]  # job → cursor of chat 1
    history: dict[int, list[int]]  # ChatHistory id → its source message ids
    cached: list[list[int]]  # message ids of each topic still in the cache
    forgotten: list[int]  # ChatHistory ids in forget_log
    stages: list[int]  # forget_times of the rows left
    jargon: list[tuple[str, int, int, str]]  # content, count, last_inference_count, meaning
    facts: list[tuple[int, str, str, int | None]]  # person, key, value, message


def _state(data: Path) -> State:
    with sqlite3.connect(data / "qunyi.db") as db:

        def rows(query: str) -> list[Any]:
            return list(db.execute(query))

        return State(
            [m for (m,) in rows("SELECT platform_message_id FROM messages ORDER BY id")],
            dict(rows("SELECT job, cursor FROM job_state WHERE chat_id = 1")),
            {i: json.loads(s) for i, s in rows("SELECT id, source_message_ids FROM chat_history")},
            [json.loads(s) for (s,) in rows("SELECT message_ids FROM topic_cache ORDER BY id")],
            [i for (i,) in rows("SELECT chat_history_id FROM forget_log ORDER BY id")],
            [f for (f,) in rows("SELECT forget_times FROM chat_history ORDER BY id")],
            rows("SELECT content, count, last_inference_count, meaning FROM jargon ORDER BY content"),
            rows(
                "SELECT person_id, key, value, message_id FROM person_facts "
                "WHERE superseded_at IS NULL ORDER BY person_id, key, value"
            ),
        )


def _no_repeats(values: list[Any]) -> bool:
    return all(n == 1 for n in Counter(values).values())


@dataclass(frozen=True)
class Case:
    """Hold request number `at` of the model `task` (1 = its first) and kill the replay there; `work`
    reads how far the held job got (short of the uninterrupted replay's when killed)."""

    task: str
    at: int
    work: Callable[[State], object]


CASES = {
    "topic placement": Case("topic", 1, lambda s: s.cursors.get(TOPIC_JOB)),
    "packing into ChatHistory": Case("summary", 1, lambda s: len(s.history) + len(s.forgotten)),
    "jargon inference between calls": Case("jargon", 2, lambda s: [(j[0], j[2]) for j in s.jargon]),
    "person consolidation": Case("person", 1, lambda s: s.cursors.get(PERSON_JOB)),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
async def test_a_replay_killed_while_a_job_waits_on_the_model_loses_nothing_when_replayed_again(
    tmp_path: Path, fake_llm: FakeOpenAI, case: Case
) -> None:
    log, config = _log(tmp_path / "log.jsonl"), _config(tmp_path / "config.toml", fake_llm.base_url)
    fake_llm.default = lambda _body: answer_json(ANSWER)
    await _replayed(log, config, tmp_path / "whole")
    whole = _state(tmp_path / "whole")
    held = Hold(answer_json(ANSWER))
    seen: Counter[str] = Counter()

    def behave(body: dict[str, Any]) -> Behaviour:
        seen[body["model"]] += 1
        return held if (body["model"], seen[body["model"]]) == (case.task, case.at) else answer_json(ANSWER)

    fake_llm.default = behave
    data = tmp_path / "data"
    process = await _replay(log, config, data)
    try:
        await asyncio.wait_for(held.reached.wait(), 120)
        process.send_signal(signal.SIGKILL)
        await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        held.release.set()
    assert process.returncode == -signal.SIGKILL
    killed = _state(data)
    fake_llm.default = lambda _body: answer_json(ANSWER)  # the held answer never went out
    await _replayed(log, config, data)
    after = _state(data)

    assert after.messages == whole.messages == [f"m{n}" for n in range(1, len(TEXTS) + 1)], "each once"
    assert after.cursors == whole.cursors, "the killed job's work redone, not skipped"
    placed = [i for ids in [*after.history.values(), *after.cached] for i in ids]
    assert _no_repeats(placed), "no message in two topics"
    assert after.cached == [] and after.history and after.forgotten, "packed, and some forgotten"
    assert _no_repeats(after.forgotten) and not set(after.forgotten) & set(after.history), "forgotten once"
    assert all(0 <= stage <= 4 for stage in after.stages)
    assert after.jargon == whole.jargon, "counted once, inferred once"
    assert after.facts == whole.facts and _no_repeats(after.facts), "no fact twice"
    assert case.work(killed) != case.work(whole) == case.work(after), "killed in the job, then it finished"


# `qunyi forget` with its pass killed at the worst moment: every deletion, forget_log row and promotion
# made inside its transaction, not yet committed.
KILLED_IN_THE_PASS = """
import asyncio, os, signal, sys
from memory.forgetting import run
apply = run._apply

async def apply_then_die(session, report, now):
    await apply(session, report, now)
    await session.flush()
    print("applied", len(report.forgotten), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

run._apply = apply_then_die
from bot.cli.main import cli
cli(sys.argv[1:])
"""


async def test_a_forgetting_pass_killed_inside_its_transaction_leaves_every_row_at_its_stage(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """Forgetting asks no model: the worst moment is inside its one write transaction. Killed there,
    the database is as before the pass, and the next pass does what an uninterrupted one does."""
    fake_llm.default = lambda _body: answer_json(ANSWER)
    log = _log(tmp_path / "log.jsonl")
    config = _config(tmp_path / "config.toml", fake_llm.base_url, forgetting=False)
    data, whole = tmp_path / "data", tmp_path / "whole"
    await _replayed(log, config, data)
    before = _state(data)
    assert len(before.history) >= 4 and before.forgotten == [] and set(before.stages) == {0}
    shutil.copytree(data, whole)
    forget = ("-m", "bot.cli.main", "forget", "--config", str(config))
    await _ended(await _python(*forget, "--data-dir", str(whole)))
    forgotten = _state(whole)
    assert forgotten.forgotten and forgotten.stages != before.stages, "the pass changes something"
    crash = await _python("-c", KILLED_IN_THE_PASS, *forget[2:], "--data-dir", str(data))
    said = await _ended(crash, -signal.SIGKILL)
    assert said == f"applied {len(forgotten.forgotten)}\n", "killed with the whole pass applied"
    assert _state(data) == before, "no row deleted, logged or promoted"
    await _ended(await _python(*forget, "--data-dir", str(data)))
    assert _state(data) == forgotten
