"""`build_web_app(app, token)`: the admin console as an aiohttp Application.

Every request must carry the access token — `Authorization: Bearer <token>`, or the session cookie a
`?token=<token>` visit sets (HttpOnly, SameSite=Strict) — and every state-changing request made with
the cookie must carry the CSRF token (a form field or the `X-CSRF-Token` header). An address that sent
too many wrong tokens is refused for a while (memory.token_throttle). Errors of the
service functions (unknown entry, bad name...) become a 400 page or JSON error, never a traceback.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from multidict import MultiDict, MultiMapping

from bot.app import App
from bot.config.settings import Settings
from bot.config.store import Listener
from bot.web import config, favicon, forgetting, jargon, notes, overview, people, topics, usage
from bot.web.context import APP_KEY, CREDENTIALS_KEY, CSRF_KEY, REMOTE_KEY, THROTTLE_KEY
from bot.web.html import error_page, local_path, logged_in_page, times_in
from bot.web.jargon import JargonNotFound
from bot.web.security import COOKIE, CSRF_FIELD, CSRF_HEADER, Credentials
from memory.changed import ChangedMeanwhile
from memory.jargon.dictionary import JargonError
from memory.local_access import host_header_is_loopback
from memory.notes.errors import NoteError
from memory.notes.names import InvalidNoteName
from memory.persons.admin import PersonAdminError
from memory.storage import DatabaseLocked, DatabaseWriteFailed
from memory.token_throttle import TokenThrottle

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
USER_ERRORS = (JargonError, PersonAdminError, NoteError, InvalidNoteName)
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _refuse(request: web.Request, status: int, message: str) -> web.Response:
    if request.path.startswith("/api/"):
        return web.json_response({"error": message}, status=status)
    return error_page(request, status, message)


def _without_token(request: web.Request) -> str:
    query = request.rel_url.query.copy()
    query.popall("token", None)
    return local_path(str(request.rel_url.with_query(query)), "/")


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The Host check (loopback names only, unless `[web] allow_remote`), the refusal of an address
    that sent too many wrong tokens (memory.token_throttle), authentication (token, cookie; the icon needs
    none), the `?token=` login (a page that sets the cookie and moves on to the
    same address without the token; not a redirect: a SameSite=Strict cookie is not sent along a
    redirect another site started, so a link followed from one landed logged out), reading a posted
    form (a body that is too large or malformed is refused with a clear error), and CSRF on unsafe
    methods."""
    creds = request.app[CREDENTIALS_KEY]
    if not request.app[REMOTE_KEY] and not host_header_is_loopback(request.headers.get("Host")):
        # A site whose name a DNS rebinding points at 127.0.0.1 still sends its own name.
        return _refuse(request, 403, "the console answers only to a loopback address (Host header)")
    if request.path == favicon.PATH and request.method in SAFE_METHODS:
        return await handler(request)
    throttle, address = request.app[THROTTLE_KEY], request.remote
    if (refusal := throttle.refusal(address)) is not None:
        response = _refuse(request, 429, refusal.message)
        response.headers.update(refusal.headers)
        return response
    if "token" in request.query and request.method == "GET":
        if not creds.token_ok(request.query.get("token")):
            throttle.wrong(address)
            return _refuse(request, 401, "wrong token")
        throttle.passed(address)
        response = logged_in_page(request, _without_token(request))
        response.set_cookie(
            COOKIE, creds.session, httponly=True, samesite="Strict", path="/", secure=request.secure
        )
        return response
    authorization = request.headers.get("Authorization")
    by_header = creds.bearer_ok(authorization)
    if not by_header and not creds.cookie_ok(request.cookies.get(COOKIE)):
        if authorization is not None:  # a token sent, and wrong
            throttle.wrong(address)
        return _refuse(
            request,
            401,
            "this console needs its access token: open the link `qunyi web` printed (…/?token=…)",
        )
    throttle.passed(address)
    request[CSRF_KEY] = creds.csrf
    form: MultiMapping[object] = MultiDict()
    if request.method not in SAFE_METHODS and request.content_type in FORM_TYPES:
        try:
            form = await request.post()  # parsed here once; the handlers get aiohttp's cached copy
        except web.HTTPClientError as exc:  # too large, too many fields
            return _refuse(request, exc.status, exc.text or exc.reason)
        except (ValueError, LookupError) as exc:  # no or wrong multipart boundary, unknown charset
            return _refuse(request, 400, f"the form could not be read: {exc}")
    # A browser attaches the cookie to cross-site requests on its own, never the Authorization header:
    # only cookie-authenticated changes need the CSRF token.
    if request.method not in SAFE_METHODS and not by_header:
        given = request.headers.get(CSRF_HEADER)
        if given is None:
            given = form.get(CSRF_FIELD)  # type: ignore[assignment]
        if not creds.csrf_ok(given if isinstance(given, str) else None):
            return _refuse(request, 403, "missing or wrong CSRF token; reload the page and try again")
    return await handler(request)


@web.middleware
async def user_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A refused request to a service function is a 400 with its message; any other client error (an
    unknown chat, page or person) is an error page too, or a JSON error under /api/; so is a write the
    database could not take (locked by another process, a full disk): a 503."""
    try:
        return await handler(request)
    except USER_ERRORS as exc:
        status = 404 if isinstance(exc, JargonNotFound) else 409 if isinstance(exc, ChangedMeanwhile) else 400
        return _refuse(request, status, str(exc))
    except (DatabaseLocked, DatabaseWriteFailed) as exc:
        # Another process held the database past the busy timeout, or the disk refused: the write was
        # rolled back, and the same request can simply be sent again.
        return _refuse(request, 503, f"{exc}; nothing was changed: try again")
    except web.HTTPClientError as exc:
        if not exc.text:
            raise
        if request.path.startswith("/api/"):
            return web.json_response({"error": exc.text}, status=exc.status, headers=_allow(exc))
        response = error_page(request, exc.status, exc.text)
        response.headers.update(_allow(exc))
        return response


@web.middleware
async def bot_time_zone(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every page shows its times in `[bot] timezone` (in force now: a reload changes it), not the
    machine's zone."""
    with times_in(request.app[APP_KEY].settings.bot.timezone):
        return await handler(request)


def _allow(exc: web.HTTPClientError) -> dict[str, str]:
    return {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else {}


async def _security_headers(_request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)


def _follow_token(credentials: Credentials) -> Listener:
    """A config listener: a reload that sets a new `[web] token` makes it the console's token at once
    (a reload that removes the token keeps the one in force: the console never runs without one)."""

    def listener(_old: Settings, new: Settings) -> None:
        if new.web.token and new.web.token != credentials.token:
            credentials.rotate(new.web.token)
            log.info("the console's access token changed with the config; log in again with the new one")

    return listener


def build_web_app(app: App, token: str, *, clock: Callable[[], float] = time.monotonic) -> web.Application:
    """The console over a built `App`; `token` is the access token every request needs; `clock`
    (seconds) is the one wrong tokens are counted on."""
    web_app = web.Application(
        middlewares=[guard, user_errors, bot_time_zone], client_max_size=2 * 1024 * 1024
    )
    web_app[APP_KEY] = app
    web_app[REMOTE_KEY] = (app.started or app.settings).web.allow_remote  # in force until a restart
    credentials = Credentials(token)
    web_app[CREDENTIALS_KEY] = credentials
    web_app[THROTTLE_KEY] = TokenThrottle("console", clock)
    app.config.subscribe(_follow_token(credentials))
    web_app.on_response_prepare.append(_security_headers)
    for module in (overview, topics, jargon, people, forgetting, usage, notes, config, favicon):
        web_app.add_routes(module.routes)
    return web_app
