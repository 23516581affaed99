"""Server-rendered HTML with escaping by default.

`Safe` marks markup we built; everything else — chat text, names, terms, error messages — goes through
`esc` (via `h`, `join`, `table`...), so a `<script>` in a message is shown as text, never run; shown
among other text, what members wrote is isolated (`bdi`, every table cell's text), so a bidirectional
control in it (an RTL override) cannot turn the rest of the line around.
No JavaScript, no external resources: the pages are plain forms and links.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from aiohttp import web
from yarl import URL

from bot.web.context import CREDENTIALS_KEY, CSRF_KEY
from bot.web.security import CSRF_FIELD, FLASH_COOKIE
from memory.recall.timeexpr import LOCAL_ZONE, in_zone
from memory.text.truncate import truncate

Cell = Any
LONG_CELL = 40  # characters of plain text beyond which a cell may wrap inside words
FLASH_CHARS = 600  # a flash message longer than this is cut (a cookie holds about 4 KB)
FLASH_SECONDS = 60  # how long a flash waits for the page it was left for
# The zone `when` shows times in: the page's request sets `[bot] timezone` (`times_in`).
_SHOWN_ZONE: ContextVar[str] = ContextVar("shown_zone", default=LOCAL_ZONE)


class Safe(str):
    """A string that is already HTML (built here, with every inserted value escaped)."""

    __slots__ = ()


def esc(value: object) -> Safe:
    """`value` as HTML text (unchanged when it is already `Safe`)."""
    if isinstance(value, Safe):
        return value
    return Safe(html.escape("" if value is None else str(value), quote=True))


def h(template: str, *args: object, **kwargs: object) -> Safe:
    """`template.format(...)` with every argument escaped (a `Safe` argument is inserted as is)."""
    return Safe(template.format(*(esc(a) for a in args), **{k: esc(v) for k, v in kwargs.items()}))


def join(parts: Iterable[object], sep: str = "") -> Safe:
    """Escaped parts joined by a (trusted) separator."""
    return Safe(sep.join(esc(p) for p in parts))


def url(path: str, /, **query: object) -> str:
    """A local URL with a query string (None and empty values left out; any name may be a
    parameter, `path` too)."""
    kept = {k: v for k, v in query.items() if v not in (None, "")}
    return path + ("?" + urlencode(kept, doseq=True) if kept else "")


def bdi(value: object) -> Safe:
    """Text members wrote (a message, a name) isolated from the page around it: an RTL override or
    another bidirectional control inside it cannot reorder what comes after it."""
    return h("<bdi>{}</bdi>", value)


def isolated(text: object) -> str:
    """Text members wrote, isolated inside plain text (a flash message) as `bdi` isolates it in
    markup: right-to-left words in it cannot reorder what follows (FSI … PDI)."""
    return f"\u2068{text}\u2069"


def link(href: str, text: object) -> Safe:
    return h('<a href="{}">{}</a>', href, text)


@contextmanager
def times_in(zone: str) -> Iterator[None]:
    """Within the block (a request), `when` shows times in `zone` (`[bot] timezone`: an IANA name or
    "local", the machine's)."""
    token = _SHOWN_ZONE.set(zone)
    try:
        yield
    finally:
        _SHOWN_ZONE.reset(token)


def when(value: float | datetime | None) -> str:
    """A timestamp (a datetime, or UTC unix seconds) for people, to the minute, in the zone of `times_in`
    (the bot's `[bot] timezone` on every console page), whatever offset it was stored with."""
    if value is None:
        return "—"
    moment = value if isinstance(value, datetime) else datetime.fromtimestamp(value, UTC)
    return in_zone(moment, _SHOWN_ZONE.get()).strftime("%Y-%m-%d %H:%M")


def _cell(value: Cell) -> Safe:
    """A table cell; its text isolated (`bdi`); long text (a pasted URL, a summary) may break anywhere
    rather than widen the page."""
    if isinstance(value, Safe):
        return h("<td>{}</td>", value)
    kind = ' class="long"' if len(str(value)) > LONG_CELL else ""
    return h("<td{}>{}</td>", Safe(kind), bdi(value) if isinstance(value, str) and value else value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Cell]], empty: str = "nothing here") -> Safe:
    """A table; cells are escaped unless `Safe`."""
    body = [join(_cell(cell) for cell in row) for row in rows]
    if not body:
        return h('<p class="muted">{}</p>', empty)
    head = join(h("<th>{}</th>", name) for name in headers)
    return h(
        "<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>",
        head,
        join(h("<tr>{}</tr>", r) for r in body),
    )


def csrf_field(request: web.Request) -> Safe:
    return h('<input type="hidden" name="{}" value="{}">', CSRF_FIELD, request[CSRF_KEY])


def form(
    request: web.Request, action: str, fields: Safe, button: str, *, danger: bool = False, inline: bool = True
) -> Safe:
    """A POST form carrying the CSRF token."""
    cls = "inline" if inline else "block"
    btn = "danger" if danger else ""
    return h(
        '<form method="post" action="{}" class="{}">{}{}<button class="{}">{}</button></form>',
        action,
        cls,
        csrf_field(request),
        fields,
        btn,
        button,
    )


def hidden(name: str, value: object) -> Safe:
    return h('<input type="hidden" name="{}" value="{}">', name, value)


def text_input(name: str, value: object = "", label: str = "", size: int = 30) -> Safe:
    return h('<label>{} <input name="{}" value="{}" size="{}"></label>', label, name, value, size)


def textarea(name: str, value: object = "", rows: int = 2, cols: int = 50) -> Safe:
    """A text area holding `value` exactly: HTML drops one line break right after `<textarea>`, so
    one is put there and a value that starts with a line break keeps it."""
    return h('<textarea name="{}" rows="{}" cols="{}">\n{}</textarea>', name, rows, cols, value)


def select(name: str, options: Mapping[str, str], chosen: str = "", label: str = "") -> Safe:
    opts = join(
        h('<option value="{}"{}>{}</option>', value, Safe(" selected" if value == chosen else ""), text)
        for value, text in options.items()
    )
    return h('<label>{} <select name="{}">{}</select></label>', label, name, opts)


NAV = (
    ("/", "Overview"),
    ("/jargon", "Jargon"),
    ("/forgetting", "Forgetting"),
    ("/usage", "LLM usage"),
    ("/notes/global", "Global notes"),
    ("/config", "Config"),
)

CSS = """
body{font:14px/1.45 system-ui,"Noto Sans CJK SC",sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#234;color:#fff;padding:.5em 1em}
header a{color:#fff;margin-right:1.2em;text-decoration:none}header b{margin-right:2em}
main{padding:1em 1.5em;max-width:1200px}table{border-collapse:collapse;margin:.5em 0;background:#fff}
td,th{border:1px solid #ddd;padding:.3em .5em;vertical-align:top;text-align:left}th{background:#eef}
p,pre,li,td.long,.hit{overflow-wrap:anywhere}td.long{min-width:12em}
.muted{color:#888}.flash{background:#efe;border:1px solid #9c9;padding:.4em .8em}
.error{background:#fee;border:1px solid #c99;padding:.4em .8em;white-space:pre-wrap}
form.inline{display:inline-block;margin:.2em .4em .2em 0}form.block{margin:.6em 0}button{cursor:pointer}
button.danger{color:#a00}pre,textarea{font-family:ui-monospace,monospace;white-space:pre-wrap}
.hit{background:#ffd}.ok{color:#070}.warn{color:#a60}.fail{color:#a00}.info{color:#06a}
nav.sub a{margin-right:1em}
"""


def chat_nav(chat_id: int, title: object) -> Safe:
    """Links to one chat's pages."""
    links = join(
        (
            link(url("/jargon", chat=chat_id), "jargon"),
            link(f"/chats/{chat_id}/topics", "topics"),
            link(f"/chats/{chat_id}/people", "people"),
            link(f"/chats/{chat_id}/notes", "notes"),
            link(url("/forgetting", chat=chat_id), "forgetting"),
        ),
        " ",
    )
    return h('<nav class="sub"><b>{}</b>: {}</nav>', bdi(title), links)


def page(
    request: web.Request, title: str, body: Safe, *, status: int = 200, heading: Safe | None = None
) -> web.Response:
    """The whole document around `body`, with the flash message a redirect left (`done`), if any: shown
    once, its cookie cleared by this response. `heading` is the title as the page shows it, where what
    members wrote is isolated (`bdi`) from the text after it (default: `title`)."""
    nav = join(link(href, text) for href, text in NAV)
    sealed = request.cookies.get(FLASH_COOKIE)
    flash = request.app[CREDENTIALS_KEY].unseal(sealed) if sealed is not None else None
    note = h('<p class="flash">{}</p>', flash) if flash else Safe("")
    document = h(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{} · Qunyi</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><style>{}</style></head>'
        "<body><header><b>群忆 Qunyi admin</b>{}</header><main><h1>{}</h1>{}{}</main></body></html>",
        title,
        Safe(CSS),
        nav,
        title if heading is None else heading,
        note,
        body,
    )
    response = web.Response(text=document, content_type="text/html", charset="utf-8", status=status)
    if sealed is not None:
        response.del_cookie(FLASH_COOKIE, path="/", secure=request.secure, httponly=True, samesite="Strict")
    return response


def error_page(request: web.Request, status: int, message: str) -> web.Response:
    return page(
        request,
        "Error" if status != 401 else "Login needed",
        h('<p class="error">{}</p>', message),
        status=status,
    )


def logged_in_page(request: web.Request, target: str) -> web.Response:
    """The answer to a login: a page that goes on to `target` at once (the `Refresh` header), a
    navigation of the console itself, so the browser sends the session cookie it has just set."""
    response = page(request, "Logged in", h('<p>Logged in. <a href="{}">Continue</a></p>', target))
    response.headers["Refresh"] = f"0; url={target}"
    return response


def local_path(value: object, default: str) -> str:
    """`value` as a redirect target when it stays on this console, else `default`.

    Judged on the URL the redirect would send: aiohttp drops tabs and line breaks from it, and a
    browser reads `//host` and `/\\host` as another site.
    """
    if not isinstance(value, str) or not value.startswith("/"):
        return default
    target = str(URL(value))
    return target if target.startswith("/") and target[1:2] not in ("/", "\\") else default


def done(request: web.Request, location: str, message: str) -> web.HTTPSeeOther:
    """The redirect after a successful POST, leaving `message` for the page it leads to: in a sealed
    cookie (HttpOnly, SameSite=Strict, gone after a minute or once shown), never in the address, so a
    reload or a bookmark does not show it again and no link can make the console say anything."""
    redirect = web.HTTPSeeOther(location)
    redirect.set_cookie(
        FLASH_COOKIE,
        request.app[CREDENTIALS_KEY].seal(truncate(message, FLASH_CHARS)),
        max_age=FLASH_SECONDS,
        path="/",
        secure=request.secure,
        httponly=True,
        samesite="Strict",
    )
    return redirect
