"""LLM usage per task: tokens in the last hour and day against the caps, calls, failures (of which
cancelled), why a task is unavailable (off, no endpoint, over budget), and the error of its latest
request when that failed."""

from __future__ import annotations

from aiohttp import web

from bot.web.context import app_of
from bot.web.html import h, page, table

routes = web.RouteTableDef()


def _cap(value: int | None) -> str:
    return "∞" if value is None else f"{value:,}"


@routes.get("/usage")
async def usage(request: web.Request) -> web.Response:
    app = app_of(request)
    report = await app.llm.report()
    rows = []
    for task, item in report.items():
        spent = item["usage"]
        rows.append(
            [
                task,
                item["model"] or "—",
                item["base_url"] or "—",
                f"{spent['hour']:,} / {_cap(spent['cap_hour'])}" if spent else "0",
                f"{spent['day']:,} / {_cap(spent['cap_day'])}" if spent else "0",
                spent["calls"] if spent else 0,
                spent["failures"] if spent else 0,
                spent["cancelled"] if spent else 0,
                (spent["blocked_reason"] if spent else None) or "",
                item["unavailable_reason"] or "usable",
                (spent["last_error"] if spent else None) or "",
            ]
        )
    state = (
        "on" if app.settings.llm.enabled else "off ([llm] enabled = false: every job takes its offline path)"
    )
    body = h(
        "<p>The LLM is {}.</p>{}",
        state,
        table(
            [
                "task",
                "model",
                "endpoint",
                "tokens last hour / cap",
                "tokens last day / cap",
                "calls",
                "failures",
                "cancelled",
                "blocked",
                "state",
                "last request failed",
            ],
            rows,
            "no tasks",
        ),
    )
    return page(request, "LLM usage", body)
