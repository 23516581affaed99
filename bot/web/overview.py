"""The index (chats with their counts, the work waiting for a model, the doctor checks) and a message
shown in its context."""

from __future__ import annotations

from aiohttp import web

from bot.cli.doctor import run_checks
from bot.offline_work import waiting_work
from bot.web.context import app_of, chat_of, chat_title, int_param, path_int
from bot.web.html import Safe, bdi, chat_nav, h, join, link, page, table, url, when
from memory import messages
from memory.context.render import FORWARD_MARK
from memory.overview import chat_overviews

routes = web.RouteTableDef()
CONTEXT_AROUND = 5


@routes.get("/")
async def index(request: web.Request) -> web.Response:
    """Every chat with its counts, the work waiting for a model, then the same checks `qunyi doctor`
    runs."""
    app = app_of(request)
    async with app.db.read() as session:
        chats = await chat_overviews(session)
    rows = [
        [
            c.id,
            link(f"/chats/{c.id}", c.name or c.key),
            c.key,
            c.messages,
            link(f"/chats/{c.id}/people", c.members),
            link(f"/chats/{c.id}/topics", f"{c.topics} (+{c.cached_topics} cached)"),
            link(url("/jargon", chat=c.id), c.jargon),
        ]
        for c in chats
    ]
    work_rows = [
        [w.what, w.job, w.waiting, "—" if w.tried is None else w.tried, w.blocked or "—"]
        for w in await waiting_work(app)
    ]
    checks = await run_checks(app)
    check_rows = [[c.name, h('<span class="{}">{}</span>', c.status, c.status), c.detail] for c in checks]
    body = h(
        "<h2>Chats</h2>{}<h2>Offline work</h2>{}<h2>Checks</h2>{}",
        table(["id", "chat", "key", "messages", "people", "topics", "jargon terms"], rows, "no chats yet"),
        table(["offline work", "job", "waiting", "tried", "stopped by"], work_rows),
        table(["check", "status", "detail"], check_rows),
    )
    return page(request, "Overview", body)


@routes.get(r"/chats/{chat_id:\d+}")
async def chat_home(request: web.Request) -> web.Response:
    chat = await chat_of(request)
    async with app_of(request).db.read() as session:
        latest = await messages.recent(session, chat.id, 20)
    body = h("{}<h2>Latest messages</h2>{}", chat_nav(chat.id, chat_title(chat)), message_table(latest))
    return page(request, chat_title(chat), body, heading=bdi(chat_title(chat)))


def message_table(shown: list[messages.StoredMessage], highlight: int | None = None) -> Safe:
    """Messages as a table (speaker and text escaped, a forward marked by its time); `highlight`
    marks one of them."""
    rows = []
    for m in shown:
        text = h('<bdi class="hit">{}</bdi>', m.text) if m.id == highlight else m.text
        sent = f"{when(m.time)} · {FORWARD_MARK}" if m.forwarded else when(m.time)
        rows.append([link(f"/chats/{m.chat_id}/messages/{m.id}", f"#{m.id}"), sent, m.speaker, text])
    return table(["id", "time", "speaker", "text"], rows, "no messages")


@routes.get(r"/chats/{chat_id:\d+}/messages/{message_id:\d+}")
async def message_in_context(request: web.Request) -> web.Response:
    """One message with the messages around it (the target of evidence and fact links)."""
    chat = await chat_of(request)
    message_id = path_int(request, "message_id")
    around = int_param(request.query.get("around"), "around", CONTEXT_AROUND, minimum=1) or CONTEXT_AROUND
    async with app_of(request).db.read() as session:
        found = [m for m in await messages.by_ids(session, [message_id]) if m.chat_id == chat.id]
        if not found:
            raise web.HTTPNotFound(text=f"no message {message_id} in chat {chat.id}")
        before = await messages.recent(session, chat.id, min(around, 50), before_id=message_id)
        after = await messages.after(session, chat.id, message_id, min(around, 50))
    body = join((chat_nav(chat.id, chat_title(chat)), message_table([*before, found[0], *after], message_id)))
    return page(request, f"Message #{message_id}", body)
