"""`qunyi run` stopping on SIGTERM within one budget: an answer under way and a job waiting on the model
get their graces at the same time, not one after the other, and every message typed before the
signal stays recorded."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from adapters.base import STOP_GRACE_SECONDS
from tests.bot.test_run_cli import ROOT, _texts, _wait_for, _wait_for_texts
from tests.fakes.openai_server import Answer, Behaviour, Delay, FakeOpenAI, llm_toml

ANSWER_SECONDS = 15.0  # how long the model takes over the answer: well inside the answers' grace
JOB_GRACE_SECONDS = 15.0  # [scheduler] shutdown_grace_seconds; the job's model call never ends
ANSWER = "周六去西湖边的宝石山吧"
SLACK_SECONDS = 10.0  # start-up of nothing, but closing the adapters and the database on a loaded machine


def _config(path: Path, base_url: str) -> None:
    path.write_text(
        llm_toml(base_url)
        + f"""[llm.tasks.reply]
model = "reply"
[llm.tasks.person]
model = "person"
[persons]
consolidation_interval_seconds = 1.0
[scheduler]
shutdown_grace_seconds = {JOB_GRACE_SECONDS}
[logging]
level = "WARNING"
""",
        encoding="utf-8",
    )


async def test_sigterm_gives_the_answer_and_the_job_their_graces_at_once(
    tmp_path: Path, fake_llm: FakeOpenAI
) -> None:
    """The answers' grace, then the adapters', then the jobs' used to run one after another: with an
    answer and a job both held by the model, SIGTERM took the sum of the graces."""
    models: set[str] = set()
    held = asyncio.Event()  # an answer and a job are both waiting on the model

    def behave(body: dict[str, Any]) -> Behaviour:
        models.add(body["model"])
        if {"reply", "person"} <= models:
            held.set()
        if body["model"] == "reply":
            return Delay(ANSWER_SECONDS, Answer(ANSWER))
        return Delay(3600.0)  # the person job waits on the model until it is cancelled

    fake_llm.default = behave
    config, data = tmp_path / "config.toml", tmp_path / "data"
    _config(config, fake_llm.base_url)
    with (tmp_path / "out.txt").open("w", encoding="utf-8") as out:
        bot = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "bot.cli.main", "run", "--config", str(config), "--data-dir", str(data)),
            stdin=asyncio.subprocess.PIPE,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,
        )
    assert bot.stdin is not None
    try:
        await asyncio.to_thread(_wait_for, data / "qunyi.pid")
        typed = ["小明说他住在杭州，周末喜欢爬山", "@群忆 周六去哪爬山？"]
        bot.stdin.write("".join(f"{line}\n" for line in typed).encode())
        await bot.stdin.drain()
        await asyncio.wait_for(held.wait(), 60)
        bot.stdin.write(b"last words\n")
        await bot.stdin.drain()
        await asyncio.to_thread(_wait_for_texts, data / "qunyi.db", 3)
        signalled = time.monotonic()
        bot.send_signal(signal.SIGTERM)
        sequential = ANSWER_SECONDS + JOB_GRACE_SECONDS
        code = await asyncio.wait_for(bot.wait(), sequential + STOP_GRACE_SECONDS)
        took = time.monotonic() - signalled
    finally:
        if bot.returncode is None:
            bot.kill()
            await bot.wait()
    output = (tmp_path / "out.txt").read_text(encoding="utf-8")
    assert code == 0, output
    assert took < max(ANSWER_SECONDS, JOB_GRACE_SECONDS) + SLACK_SECONDS < sequential, (took, output)
    assert "job person_consolidation was cancelled" in output
    assert "Traceback" not in output
    assert _texts(data / "qunyi.db") == [*typed, "last words", ANSWER], "the answer went out too"
