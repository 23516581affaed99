"""The bot's notes per chat (and the global ones): list, view with links and backlinks, edit."""

from __future__ import annotations

from urllib.parse import quote

from aiohttp import web

from bot.web.context import app_of, chat_of, chat_title
from bot.web.html import (
    Safe,
    chat_nav,
    done,
    form,
    h,
    hidden,
    join,
    link,
    page,
    table,
    text_input,
    textarea,
)
from memory.notes.errors import NoteChanged
from memory.notes.store import NoteStore, version_of

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


def _editor(request: web.Request, base: str, name: str, content: str, current: str | None) -> Safe:
    """The edit form holding `content`; saving it is refused if the note no longer holds `current`
    (None: no check, the save creates the note)."""
    fields = h(
        "{}<br>{}",
        textarea("content", content, 16, 100),
        hidden("version", version_of(current)) if current is not None else Safe(""),
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
        _editor(request, base, name, content, content),
    )
    return page(request, f"Note: {name}", body)


@routes.post(GLOBAL + NAME)
@routes.post(CHAT + NAME)
async def note_save(request: web.Request) -> web.Response:
    store, base, nav = await _scope(request)
    name = request.match_info["name"]
    data = await request.post()
    content = str(data.get("content", "")).replace("\r\n", "\n")
    version = data.get("version")
    try:
        created = await store.set(name, content, base=version if isinstance(version, str) else None)
    except NoteChanged as exc:
        return _conflict(request, base, nav, exc, content)
    raise done(request, _note_url(base, name), "created" if created else "saved")


def _conflict(request: web.Request, base: str, nav: Safe, changed: NoteChanged, mine: str) -> web.Response:
    """A 409 page for an edit of a note that changed meanwhile: the note as it is now, and the
    admin's text in an editor that replaces it when saved again."""
    now = (
        h("<p>(it no longer exists)</p>") if changed.current is None else h("<pre>{}</pre>", changed.current)
    )
    body = h(
        '{}<p class="error">{}</p><h2>The note now</h2>{}<h2>Your text</h2>'
        "<p>Merge what you need into it, then save again.</p>{}",
        nav,
        str(changed),
        now,
        _editor(request, base, changed.name, mine, changed.current),
    )
    return page(request, f"Note: {changed.name} changed meanwhile", body, status=409)
