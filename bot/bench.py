"""`qunyi bench`: replay a generated log through the live pipeline and time the parts that matter."""

from __future__ import annotations

import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.app import build_app
from bot.config import ConfigStore
from bot.replay import replay, replay_clock
from bot.samplegen import generate
from memory.models import Chat
from memory.storage.database import DB_FILENAME

QUERIES = ("周末去哪里爬山", "deploy 失败", "火锅", "生日礼物", "who is coming on Saturday", "上周三说了什么")


def bench_database(data_dir: Path) -> Path:
    """Where a bench run keeps its database inside `--data-dir`."""
    return data_dir / "data" / DB_FILENAME


async def run_bench(
    config: ConfigStore, messages: int, chats: int, seed: int, data_dir: Path | None
) -> dict[str, Any]:
    """Generate `messages` in `chats` chats, replay them, then time recall and context building."""
    with tempfile.TemporaryDirectory(prefix="qunyi-bench-") as tmp:
        where = data_dir or Path(tmp)
        log = where / "bench.jsonl"
        where.mkdir(parents=True, exist_ok=True)
        rows = generate(messages, chats, seed=seed)
        log.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
        clock = replay_clock()
        app = await build_app(config, bench_database(where).parent, clock, watch_config=False)
        try:
            started = time.perf_counter()
            report = await replay(app, clock, log)
            replay_seconds = time.perf_counter() - started
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
            stats = await app.memory.stats()
        finally:
            await app.close()
    recall_times.sort()
    return {
        "messages": report.recorded,
        "chats": len(chat_ids),
        "replay_seconds": round(replay_seconds, 2),
        "messages_per_second": round(report.recorded / replay_seconds, 1) if replay_seconds else None,
        "job_runs": report.job_runs,
        "recall_ms_median": round(1000 * recall_times[len(recall_times) // 2], 2) if recall_times else None,
        "recall_ms_max": round(1000 * recall_times[-1], 2) if recall_times else None,
        "context_ms_max": round(1000 * max(context_times), 2) if context_times else None,
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rows": stats,
    }
