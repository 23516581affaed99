"""The web playground adapter: a page on loopback where a person chats with the bot as any member.

The page (`GET /`, its script, style and icon) needs no token; every `/api/` call needs
`Authorization: Bearer <token>`, which the page takes from the address it is opened with
(`…/#token=…`, logged at start). A browser sends that header cross-site only after a CORS preflight,
which this server never answers, so another site cannot drive the API. Unless `allow_remote`, a
request whose Host header is not a loopback name is refused (DNS rebinding). An address that sent too
many wrong tokens is refused for a while, as the admin console does (memory.token_throttle).

Posts, and a member's edits and deletions of their own messages, are handled one at a time, in
order; each is answered once the bot has handled it, so the bot's reply to a post (if any) is already
in the transcript then. Edits and deletions reach the bot as a platform's do (`ChatMessage.edited`,
`MessageDeletion`), so memory follows them.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from typing import Any, TypeVar

from aiohttp import web

from adapters.base import STOP_GRACE_SECONDS, Adapter, InFlight, MessageHandler, unless_set
from adapters.listening import listen
from adapters.playground.changes import Change, edited_message, read_change
from adapters.playground.config import PlaygroundConfig
from adapters.playground.event import PLATFORM, BadPost, Post, read_post, sender_id, to_chat_message
from adapters.playground.transcript import Transcripts
from memory.clock import Clock, SystemClock
from memory.local_access import bearer_matches, host_header_is_loopback, new_token
from memory.token_throttle import TokenThrottle
from memory.types import ChatKind, ChatMessage, InvalidMessage, MessageDeletion

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Taken = TypeVar("Taken")  # what a request body is read as: a post, an edit, a deletion
StoredKind = Callable[[str], Awaitable[ChatKind | None]]  # a chat id -> the kind memory holds for it
StoredMembers = Callable[
    [str], Awaitable[Mapping[str, str]]
]  # a chat id -> its members memory knows, by name
STATIC = {  # path -> (resource, content type, Cache-Control: None for the default, no-store)
    "/": ("index.html", "text/html", None),
    "/page.js": ("page.js", "text/javascript", None),
    "/page.css": ("page.css", "text/css", None),
    "/favicon.ico": ("favicon.svg", "image/svg+xml", "public, max-age=86400"),  # browsers ask for it
}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
NOT_DELIVERED = "the bot is stopping; the message was not delivered"
NOT_ANSWERED = "the bot is stopping and did not answer in time: the message was recorded, its answer dropped"
NOT_APPLIED = "the bot is stopping and did not finish handling this in time: memory may not follow it"
FAILED = "the playground failed to answer this request"
HANDLER_FAILED = (
    "the bot failed to handle it: the transcript shows it, memory has it only if the bot got that far; "
    "its log says why"
)
_SHUTDOWN_SECONDS = 2.0  # after the grace InFlight gave, for the connections still open


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers)


class PlaygroundAdapter(Adapter):
    """Chats in a browser page; see the module docstring for access and `PlaygroundConfig`.

    `stored_kind` tells the kind memory holds for a chat, so that one posted to before a restart
    keeps its kind; without it a chat's kind is the one it was first used as in this run.
    `stored_members` tells the members memory knows in a chat (name -> sender id), whom a typed @
    mentions as it does those who posted in this run; without it only the latter. `seconds` is the
    clock (in seconds) wrong tokens are counted on."""

    platform = PLATFORM
    reports_failures = True  # a post whose handling failed is answered with a 500

    def __init__(
        self,
        config: PlaygroundConfig,
        *,
        bot_id: str,
        bot_name: str,
        clock: Clock | None = None,
        stored_kind: StoredKind | None = None,
        stored_members: StoredMembers | None = None,
        seconds: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self._stored_kind = stored_kind
        self._stored_members = stored_members
        self.bot_id = bot_id
        self.bot_name = bot_name
        self._clock = clock or SystemClock()
        self._token = config.token or new_token()
        self._throttle = TokenThrottle("playground", seconds)
        self._run = secrets.token_hex(4)  # message ids of this run never clash with an earlier run's
        self._ids = itertools.count(1)
        self.transcripts = Transcripts(config.keep_messages, config.max_chats)
        self._turn = asyncio.Lock()
        self._in_flight = InFlight()
        self._handler: MessageHandler | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._stopping = False
        self._cut = asyncio.Event()  # set when the stop's grace for the events being handled is over
        self.url: str | None = None  # the page's address with the token, once started

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self, handler: MessageHandler) -> None:
        """Serve the page and the API; returns once listening and logs the page's address."""
        self._handler = handler
        self._stopping = False
        self._cut = asyncio.Event()
        self._runner = web.AppRunner(self.web_app(), access_log=None, shutdown_timeout=_SHUTDOWN_SECONDS)
        await self._runner.setup()
        self._site = await listen(
            self._runner,
            self.config.host,
            self.config.port,
            host_key="[adapters.playground] host",
            port_key="[adapters.playground] port",
        )
        port = self._runner.addresses[0][1] if self._runner.addresses else self.config.port
        host = f"[{self.config.host}]" if ":" in self.config.host else self.config.host
        self.url = f"http://{host}:{port}/#token={self._token}"
        log.info("web playground on %s", self.url)

    async def stop(self, within: float = STOP_GRACE_SECONDS) -> None:
        """Stop listening and refuse new posts, let the message being handled finish (up to `within`
        seconds; its reply is still added and its post answered), else cut its handling short and
        answer its post with a 503, then close the connections left."""
        self._stopping = True
        if self._site is not None:
            await self._site.stop()
            self._site = None
        if await self._in_flight.drained(within):
            self._cut.set()  # the runner's cleanup waits (up to _SHUTDOWN_SECONDS) for those 503s
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def send_text(
        self, chat_id: str, text: str, *, chat_kind: ChatKind = ChatKind.GROUP, reply_to: str | None = None
    ) -> ChatMessage:
        message = ChatMessage.outgoing(
            self.platform,
            chat_id,
            self._next_id(),
            self.bot_id,
            self.bot_name,
            text,
            self._clock.now(),
            chat_kind,
            reply_to,
        )
        self.transcripts.add(message)
        return message

    def _next_id(self) -> str:
        return f"{self._run}-{next(self._ids)}"

    # -- the web application -----------------------------------------------------------------------

    def web_app(self) -> web.Application:
        """The page and the API as an aiohttp Application (bodies limited to `max_body_bytes`)."""
        app = web.Application(middlewares=[self._guard], client_max_size=self.config.max_body_bytes)
        for path in STATIC:
            app.router.add_get(path, self._static)
        app.router.add_get("/api/chats", self._chats)
        app.router.add_get("/api/chats/{chat_id}/messages", self._messages)
        app.router.add_post("/api/messages", self._post)
        app.router.add_patch("/api/chats/{chat_id}/messages/{message_id}", self._edit)
        app.router.add_delete("/api/chats/{chat_id}/messages/{message_id}", self._delete)
        app.on_response_prepare.append(_security_headers)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The Host check, the token on /api/ (refused unchecked from an address that sent too many
        wrong ones), and every error as a JSON error: a client's with its 4xx status, a failure of the
        playground itself as a 500 (its traceback goes to the log)."""
        if not self.config.allow_remote and not host_header_is_loopback(request.headers.get("Host")):
            return _error(403, "the playground answers only to a loopback address (Host header)")
        if request.path.startswith("/api/") and (refused := self._token_refused(request)) is not None:
            return refused
        try:
            return await handler(request)
        except web.HTTPException as exc:  # no such route, wrong method, body too large
            if exc.status < 400:
                raise
            allow = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
            return _error(exc.status, exc.text or exc.reason, allow)
        except Exception as exc:
            log.exception("playground %s %s failed", request.method, request.path)
            return _error(500, f"{FAILED} ({type(exc).__name__}); its log says why")

    def _token_refused(self, request: web.Request) -> web.Response | None:
        """A 429 to an address that sent too many wrong tokens, its token not checked; a 401 without
        the token (a wrong one counts against the address, a missing one does not); None when it is
        right (the address's count is cleared)."""
        if (refusal := self._throttle.refusal(request.remote)) is not None:
            return _error(429, refusal.message, refusal.headers)
        authorization = request.headers.get("Authorization")
        if bearer_matches(authorization, self._token):
            self._throttle.passed(request.remote)
            return None
        if authorization is not None:
            self._throttle.wrong(request.remote)
        return _error(401, "the API needs 'Authorization: Bearer <token>': open the address logged at start")

    async def _static(self, request: web.Request) -> web.Response:
        name, content_type, cache = STATIC[request.path]
        body = resources.files("adapters.playground").joinpath("static", name).read_text(encoding="utf-8")
        headers = {"Cache-Control": cache} if cache else None
        return web.Response(text=body, content_type=content_type, charset="utf-8", headers=headers)

    async def _chats(self, _request: web.Request) -> web.Response:
        chats = [
            {"chat_id": chat_id, "chat_kind": kind.value, "cursor": newest}
            for chat_id, kind, newest in self.transcripts.chats()
        ]
        bot = {"id": self.bot_id, "name": self.bot_name}
        return web.json_response({"run": self._run, "bot": bot, "chats": chats})

    async def _messages(self, request: web.Request) -> web.Response:
        after = request.query.get("after", "0")
        if not after.isascii() or not after.isdigit():
            return _error(400, "after must be a whole number of zero or more (the cursor last read)")
        page = self.transcripts.after(request.match_info["chat_id"], int(after))
        return web.json_response(
            {
                "run": self._run,
                "chat_id": request.match_info["chat_id"],
                "chat_kind": page.kind.value if page.kind is not None else None,
                "messages": [entry.to_json() for entry in page.entries],
                "cursor": page.cursor,
                "missed": page.missed,
                "deleted": page.deleted,
            }
        )

    async def _post(self, request: web.Request) -> web.Response:
        read = functools.partial(read_post, max_name_chars=self.config.max_name_chars)
        return await self._in_turn(request, read, self._deliver)

    async def _edit(self, request: web.Request) -> web.Response:
        return await self._change(request, edit=True)

    async def _delete(self, request: web.Request) -> web.Response:
        return await self._change(request, edit=False)

    async def _change(self, request: web.Request, *, edit: bool) -> web.Response:
        read = functools.partial(read_change, max_name_chars=self.config.max_name_chars, edit=edit)
        chat_id, message_id = request.match_info["chat_id"], request.match_info["message_id"]
        return await self._in_turn(request, read, functools.partial(self._apply, chat_id, message_id))

    async def _in_turn(
        self,
        request: web.Request,
        read: Callable[[bytes], Taken],
        act: Callable[[Taken], Awaitable[web.Response]],
    ) -> web.Response:
        """Read the body of a request that changes a chat (a 400 when it is bad), then act on it when
        its turn has come: one at a time, in order; a 503 once the bot is stopping."""
        if self._stopping:
            return _error(503, NOT_DELIVERED)
        try:
            taken = read(await request.read())
        except BadPost as exc:
            return _error(400, str(exc))
        with self._in_flight.handling():
            async with self._turn:
                if self._stopping:
                    return _error(503, NOT_DELIVERED)
                return await act(taken)

    async def _deliver(self, post: Post) -> web.Response:
        """Add the post to its chat and hand it to the bot."""
        if refused := await self._kind_refused(post):
            return refused
        quoted = None
        if post.reply_to is not None:
            quoted = self.transcripts.find(post.chat_id, post.reply_to)
            if quoted is None:
                return _error(400, f"reply_to: no message {post.reply_to!r} in chat {post.chat_id!r}")
        try:
            message = to_chat_message(
                post,
                message_id=self._next_id(),
                time=self._clock.now(),
                bot_id=self.bot_id,
                bot_name=self.bot_name,
                quoted=quoted,
                members=await self._members(post.chat_id),
            )
        except InvalidMessage as exc:
            return _error(400, str(exc))
        return await self._hand_on(message, {"message": self.transcripts.add(message).to_json()})

    async def _apply(self, chat_id: str, message_id: str, change: Change) -> web.Response:
        """Edit or delete a member's message in the transcript and hand the edit or deletion on to
        the bot, as a platform delivers them."""
        original = self.transcripts.find(chat_id, message_id)
        if original is None:
            return _error(404, f"no message {message_id!r} in chat {chat_id!r} (the page's transcript)")
        if original.is_bot:
            return _error(403, "the bot's messages cannot be edited or deleted from the page")
        if original.sender_id != sender_id(change.user):
            return _error(
                403, f"message {message_id!r} was sent by {original.sender_name!r}: only they may change it"
            )
        if change.text is None:
            self.transcripts.remove(chat_id, message_id)
            deletion = MessageDeletion(PLATFORM, chat_id, message_id, original.chat_kind)
            return await self._hand_on(deletion, {"deleted": message_id})
        members = await self._members(chat_id)
        try:
            edited = edited_message(
                original, change.text, members=members, bot_id=self.bot_id, bot_name=self.bot_name
            )
        except InvalidMessage as exc:
            return _error(400, str(exc))
        entry = self.transcripts.replace(edited)
        assert entry is not None, "found above, in the same turn"
        return await self._hand_on(edited, {"message": entry.to_json()})

    async def _hand_on(self, event: ChatMessage | MessageDeletion, answer: dict[str, Any]) -> web.Response:
        """Hand `event`, already in the transcript, to the bot; `answer` is the reply to the page. A
        stop whose grace ends first cuts the handling short and answers a 503 (a new message is
        recorded before the bot answers it)."""
        try:
            handled = await self._handled(event)
        except Exception:
            log.exception("handling playground %s of %s failed", type(event).__name__, event.message_id)
            return web.json_response({"error": HANDLER_FAILED, **answer}, status=500)
        if not handled:
            new = isinstance(event, ChatMessage) and not event.edited
            return web.json_response({"error": NOT_ANSWERED if new else NOT_APPLIED, **answer}, status=503)
        return web.json_response(answer)

    async def _handled(self, event: ChatMessage | MessageDeletion) -> bool:
        """Hand `event` to the bot and wait until it is handled (raising what the handler raised) or
        the stop's grace is over (False: the handling is cancelled)."""
        if self._handler is None:
            return True
        handling = asyncio.ensure_future(self._handler(event))
        if not await unless_set(handling, self._cut, _SHUTDOWN_SECONDS):
            return False
        handling.result()
        return True

    async def _members(self, chat_id: str) -> dict[str, str]:
        """The chat's members an @ mentions, by name (name -> sender id): those memory knows from
        earlier runs and those who posted in this run, who win a name both have."""
        stored = await self._stored_members(chat_id) if self._stored_members is not None else {}
        return {**stored, **self.transcripts.members(chat_id)}

    async def _kind_refused(self, post: Post) -> web.Response | None:
        """A 409 when the chat is of the other kind in this run or, first posted to in this run, in
        memory; its `chat_kind` is the chat's kind."""
        kind, since = self.transcripts.kind_of(post.chat_id), "in this run"
        if kind is None and self._stored_kind is not None:
            kind, since = await self._stored_kind(post.chat_id), "in memory (posted to in an earlier run)"
        if kind is None or kind is post.chat_kind:
            return None
        error = f"chat {post.chat_id!r} is a {kind.value} chat {since}"
        return web.json_response({"error": error, "chat_kind": kind.value}, status=409)


async def _security_headers(_request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
