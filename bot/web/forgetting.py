"""Forgetting: the log of ChatHistory rows deleted, and a dry run of the next pass under the settings
in force (what it would delete and promote; nothing is changed)."""

from __future__ import annotations

from aiohttp import web

from bot.history_setup import forget_policy
from bot.web.context import app_of, chat_by_id, int_param
from bot.web.html import h, link, page, table, when
from memory.forgetting import forget_log, forget_pass

routes = web.RouteTableDef()
LOG_LIMIT = 200


@routes.get("/forgetting")
async def forgetting(request: web.Request) -> web.Response:
    app = app_of(request)
    chat_id = int_param(request.query.get("chat"), "chat")
    if chat_id is not None:
        await chat_by_id(request, chat_id)  # an unknown chat is a 404, not an empty page
    settings = app.settings.forgetting
    policy, scope = forget_policy(app.settings)
    preview = await forget_pass(app.db, app.clock.now(), policy, scope, chat_id=chat_id, dry_run=True)
    async with app.db.read() as session:
        log = await forget_log(session, chat_id, limit=LOG_LIMIT)
    would = [
        [f.id, link(f"/chats/{f.chat_id}/topics", f.chat_id), f.theme, f.stage, f.count, f.end]
        for f in preview.forgotten
    ]
    plans = [
        [
            p.stage.number,
            p.cohort,
            len(p.deleted),
            len(p.promoted),
            "waiting for a bigger cohort" if p.waiting else "",
        ]
        for p in preview.plans
    ]
    logged = [
        [
            when(e.time),
            e.chat_history_id,
            link(f"/chats/{e.chat_id}/topics", e.chat_id),
            e.theme,
            e.stage,
            e.count,
        ]
        for e in log
    ]
    state = (
        "on"
        if settings.enabled
        else "off ([forgetting] enabled = false; the preview shows what a pass would do)"
    )
    body = h(
        "<p>Forgetting is {}; a pass runs every {} minutes, cohorts are {}. Scope of this page: {}.</p>"
        "<h2>Next pass (dry run at {})</h2>{}{}<h2>Log (newest first)</h2>{}",
        state,
        settings.interval_minutes,
        "per chat" if scope == "chat" else "across all chats",
        "all chats" if chat_id is None else f"chat {chat_id}",
        when(app.clock.now()),
        table(
            ["stage", "cohort", "would delete", "would promote", ""],
            plans,
            "no rows old enough for any stage",
        ),
        table(
            ["ChatHistory id", "chat", "theme", "stage", "count", "end"], would, "nothing would be deleted"
        ),
        table(["time", "ChatHistory id", "chat", "theme", "stage", "count"], logged, "nothing forgotten yet"),
    )
    return page(request, "Forgetting", body)
