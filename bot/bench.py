"""`qunyi bench`: replay a generated log through the live pipeline and time the parts that matter."""

from __future__ import annotations

import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import select

from adapters.importers import iter_import
from bot.app import App, build_app
from bot.config import ConfigStore
from bot.importing import record_import
from bot.replay import replay, replay_clock
from bot.samplegen import generate
from memory.clock import ManualClock
from memory.models import Chat
from memory.storage.database import DB_FILENAME

QUERIES = ("周末去哪里爬山", "deploy 失败", "火锅", "生日礼物", "who is coming on Saturday", "上周三说了什么")


def bench_database(data_dir: Path) -> Path:
    """Where a bench run keeps its database inside `--data-dir`."""
    return data_dir / "data" / DB_FILENAME


IMPORT_CATCH_UP_ROUNDS = 3
"""Runs of every daemon after `--import`, as `qunyi import` does by default (`--catch-up-rounds`)."""


async def run_bench(
    config: ConfigStore, messages: int, chats: int, seed: int, data_dir: Path | None, importing: bool = False
) -> dict[str, Any]:
    """Generate `messages` in `chats` chats, replay them (or, with `importing`, import them as `qunyi
    import replay` does, then let the daemons catch up), then time recall and context building."""
    with tempfile.TemporaryDirectory(prefix="qunyi-bench-") as tmp:
        where = data_dir or Path(tmp)
        log = where / "bench.jsonl"
        where.mkdir(parents=True, exist_ok=True)
        rows = generate(messages, chats, seed=seed)
        log.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
        clock = replay_clock()  # an import runs on the wall clock, as `qunyi import` does
        app = await build_app(
            config, bench_database(where).parent, None if importing else clock, watch_config=False
        )
        try:
            run = await (_import(app, log) if importing else _replay(app, clock, log))
            latencies = await _latencies(app)
        finally:
            await app.close()
    rows = latencies.pop("rows")
    return {
        "messages": run.pop("messages"),
        "chats": latencies.pop("chats"),
        **run,
        **latencies,
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rows": rows,
    }


async def _replay(app: App, clock: ManualClock, log: Path) -> dict[str, Any]:
    """Replay `log` through the live pipeline in simulated time."""
    started = time.perf_counter()
    report = await replay(app, clock, log)
    seconds = time.perf_counter() - started
    return {
        "messages": report.recorded,
        "replay_seconds": round(seconds, 2),
        "messages_per_second": _rate(report.recorded, seconds),
        "job_runs": report.job_runs,
    }


async def _import(app: App, log: Path) -> dict[str, Any]:
    """Import `log` through the batch path, then run every daemon `IMPORT_CATCH_UP_ROUNDS` times."""
    started = time.perf_counter()
    totals = await record_import(app, iter_import("replay", log), str(log), lambda _issue: None)
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(IMPORT_CATCH_UP_ROUNDS):
        await app.runner.run_all()
    return {
        "messages": totals.created,
        "import_seconds": round(seconds, 2),
        "messages_per_second": _rate(totals.created, seconds),
        "catch_up_seconds": round(time.perf_counter() - started, 2),
        "job_runs": dict(app.runner.runs),
    }


def _rate(count: int, seconds: float) -> float | None:
    return round(count / seconds, 1) if seconds else None


async def _latencies(app: App) -> dict[str, Any]:
    """The chats' count, recall and reply-context timings over every chat, and the table sizes."""
    async with app.db.read() as session:
        chat_ids = list((await session.scalars(select(Chat.id))).all())
    recall_times = []
    context_times = []
    for chat_id in chat_ids:
        for query in QUERIES:
            t = time.perf_counter()
            await app.memory.search([chat_id], query, 10)
            recall_times.append(time.perf_counter() - t)
        recent = await app.memory.recent(chat_id, 1)
        t = time.perf_counter()
        await app.memory.context_for_reply(chat_id, recent[-1] if recent else None)
        context_times.append(time.perf_counter() - t)
    recall_times.sort()
    return {
        "chats": len(chat_ids),
        "recall_ms_median": round(1000 * recall_times[len(recall_times) // 2], 2) if recall_times else None,
        "recall_ms_max": round(1000 * recall_times[-1], 2) if recall_times else None,
        "context_ms_max": round(1000 * max(context_times), 2) if context_times else None,
        "rows": await app.memory.stats(),
    }
