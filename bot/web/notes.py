"""The bot's notes per chat (and the global ones): list, view with links and backlinks, edit."""

from __future__ import annotations

from urllib.parse import quote

from aiohttp import web

from bot.web.context import app_of, chat_of, chat_title
from bot.web.html import Safe, chat_nav, done, form, h, join, link, page, table, text_input
from memory.notes.store import NoteStore

routes = web.RouteTableDef()
GLOBAL = "/notes/global"
CHAT = r"/chats/{chat_id:\d+}/notes"
NAME = "/{name}"


async def _scope(request: web.Request) -> tuple[NoteStore, str, Safe]:
    """The note store of the path's scope (a chat's, or the global one), its base URL, its navigation."""
    notes = app_of(request).memory.notes
    if notes is None:
        raise web.HTTPNotFound(text="notes are not configured in this app")
    if "chat_id" not in request.match_info:
        return notes.global_scope(), GLOBAL, h("<p>Notes shared by every chat.</p>")
    chat = await chat_of(request)
    store = notes.for_chat(chat.key)
    return store, f"/chats/{chat.id}/notes", chat_nav(chat.id, chat_title(chat))


def _note_url(base: str, name: str) -> str:
    return f"{base}/{quote(name, safe='')}"


def _editor(request: web.Request, base: str, name: str, content: str) -> Safe:
    fields = h(
        '<textarea name="content" rows="16" cols="100">{}</textarea><br>',
        content,
    )
    return form(request, _note_url(base, name), fields, "Save", inline=False)


@routes.get(GLOBAL)
@routes.get(CHAT)
async def notes_list(request: web.Request) -> web.Response:
    store, base, nav = await _scope(request)
    scores = {s.name: s for s in await store.scores()}
    rows = [
        [
            link(_note_url(base, name), name),
            f"{scores[name].weight:.2f}" if name in scores else "",
            scores[name].chars if name in scores else "",
        ]
        for name in await store.list()
    ]
    new = form(request, base, text_input("name", "", "new note named", 20), "Create", inline=False)
    body = join((nav, table(["note", "link weight", "characters"], rows, "no notes"), new))
    return page(request, "Notes", body)


@routes.post(GLOBAL)
@routes.post(CHAT)
async def note_new(request: web.Request) -> web.Response:
    store, base, _nav = await _scope(request)
    name = str((await request.post()).get("name", ""))
    if not await store.exists(name):
        await store.set(name, "")
    raise web.HTTPSeeOther(_note_url(base, name.strip()))


@routes.get(GLOBAL + NAME)
@routes.get(CHAT + NAME)
async def note_show(request: web.Request) -> web.Response:
    store, base, nav = await _scope(request)
    name = request.match_info["name"]
    content = await store.get(name)
    if content is None:
        raise web.HTTPNotFound(text=f"no note named {name!r}")
    links = join((link(_note_url(base, n), n) for n in await store.links(name)), ", ")
    backlinks = join((link(_note_url(base, n), n) for n in await store.backlinks(name)), ", ")
    body = h(
        "{}<p>Links: {} · Linked from: {}</p><h2>Content</h2><pre>{}</pre><h2>Edit</h2>{}",
        nav,
        links or "—",
        backlinks or "—",
        content,
        _editor(request, base, name, content),
    )
    return page(request, f"Note: {name}", body)


@routes.post(GLOBAL + NAME)
@routes.post(CHAT + NAME)
async def note_save(request: web.Request) -> web.Response:
    store, base, _nav = await _scope(request)
    name = request.match_info["name"]
    content = str((await request.post()).get("content", "")).replace("\r\n", "\n")
    created = await store.set(name, content)
    raise done(_note_url(base, name), "created" if created else "saved")
