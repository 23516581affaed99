"""The OneBot v11 adapter: a reverse WebSocket server (Universal role) or a forward client.

All outbound traffic goes through `call_action`, which sends `{"action", "params", "echo"}` on the
connection and waits for the response carrying the same `echo`. Incoming events are queued and handled
one at a time in arrival order, so a handler may itself call actions (their responses are read by the
connection's reader, which never waits on the handler).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import WSCloseCode, WSMsgType, web

from adapters.base import STOP_GRACE_SECONDS, Adapter, InFlight, MessageHandler
from adapters.listening import listen
from adapters.neutral import as_id
from adapters.onebot_v11.config import OneBotConfig
from adapters.onebot_v11.errors import ActionFailed, ActionTimeout, NotConnected, OneBotError
from adapters.onebot_v11.event import PLATFORM, MetaEvent, is_action_response, post_type
from adapters.onebot_v11.message import maybe_int
from adapters.onebot_v11.reader import EventReader
from adapters.onebot_v11.sending import chat_to_send_to, send_action, sent_message
from memory import untrusted_json
from memory.clock import Clock, SystemClock
from memory.local_access import same
from memory.text import loggable
from memory.types import ChatKind, ChatMessage, InboundEvent

log = logging.getLogger(__name__)

_CLOSE_TIMEOUT = 2.0
_REPLACED = b"replaced by a newer connection of the same bot"
MIN_HEARTBEAT_MS = 1000
"""A heartbeat interval reported under this is taken as this (real implementations beat every 5–30 s):
`interval: 1` from a buggy or hostile one made the watchdog close a healthy connection within 3 ms."""

WebSocket = web.WebSocketResponse | aiohttp.ClientWebSocketResponse
FrameReader = Callable[[WebSocket, float], Awaitable[aiohttp.WSMessage]]


async def next_frame(ws: WebSocket, within: float) -> aiohttp.WSMessage:
    """`ws`'s next frame; TimeoutError when none comes within `within` seconds (a ping or a pong,
    which aiohttp answers or takes itself, starts the wait again)."""
    return await ws.receive(timeout=within)


@dataclass(eq=False)
class _Connection:
    ws: WebSocket
    self_id: str | None
    nickname: str = ""
    heartbeat_ms: int | None = None
    closed: bool = False
    login: asyncio.Task[None] | None = None  # the get_login_info call that tells the nickname
    replaced_by: _Connection | None = None  # the reconnection of the same bot that took this one's place

    def current(self) -> _Connection:
        """This connection, or the one that replaced it (and so on): where its bot is reached now."""
        conn = self
        while conn.replaced_by is not None:
            conn = conn.replaced_by
        return conn


class OneBotAdapter(Adapter):
    """QQ through a OneBot v11 implementation; see `OneBotConfig` for the two connection modes.

    Each connection's frames are read with `read_frame` under its stale limit (`next_frame`: in real
    seconds; tests pass one on a clock they move, to show when a connection goes stale)."""

    platform = PLATFORM

    def __init__(
        self, config: OneBotConfig, *, clock: Clock | None = None, read_frame: FrameReader = next_frame
    ) -> None:
        self.config = config
        self._clock = clock or SystemClock()
        self._read_frame = read_frame
        self._handler: MessageHandler | None = None
        self._conns: list[_Connection] = []
        self._pending: dict[str, tuple[asyncio.Future[dict[str, Any]], _Connection]] = {}
        self._echo = itertools.count(1)
        self._queue: asyncio.Queue[tuple[_Connection, dict[str, Any]]] = asyncio.Queue()
        self._in_flight = InFlight()  # the events received and not handled yet: queued, or in hand
        self._tasks: set[asyncio.Task[Any]] = set()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._bound_port: int | None = None
        self._stopping = False
        self._connected = asyncio.Event()
        self._reader = EventReader(resolve_replies=config.resolve_replies)

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self, handler: MessageHandler) -> None:
        """Start the server (reverse) or the dialling loop (forward); returns once listening/dialling."""
        self._handler = handler
        self._stopping = False
        self._spawn(self._dispatch_loop())
        if self.config.mode == "reverse":
            app = web.Application()
            app.router.add_get(self.config.path, self._handle_reverse)
            self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
            await self._runner.setup()
            site = await listen(
                self._runner,
                self.config.host,
                self.config.port,
                host_key="[adapters.onebot_v11] host",
                port_key="[adapters.onebot_v11] port",
            )
            server = getattr(site, "_server", None)
            sockets = getattr(server, "sockets", None) or []
            self._bound_port = sockets[0].getsockname()[1] if sockets else self.config.port
            log.info(
                "OneBot v11 reverse WebSocket listening on ws://%s:%s%s",
                self.config.host,
                self._bound_port,
                self.config.path,
            )
        else:
            self._session = aiohttp.ClientSession()
            self._spawn(self._forward_loop())

    async def stop(self, within: float = STOP_GRACE_SECONDS) -> None:
        """Handle the events already received (up to `within` seconds, the connections still open so
        replies go out), then close every connection, fail pending actions, stop the server or the
        dialling loop."""
        await self._in_flight.drained(within, "events received are still to be handled: they are dropped")
        self._stopping = True
        for conn in list(self._conns):
            await self._close(conn, WSCloseCode.GOING_AWAY, b"qunyi stopping")
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._fail_pending(None, NotConnected("adapter stopped"))
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def bound_port(self) -> int | None:
        """The port the reverse server listens on (useful with `port = 0`)."""
        return self._bound_port

    @property
    def self_ids(self) -> list[str]:
        """The bot accounts currently connected."""
        return [c.self_id for c in self._conns if c.self_id is not None and not c.closed]

    async def wait_connected(self, within: float = 30.0) -> str:
        """Wait up to `within` seconds until a bot account is connected and identified; return its id."""
        await asyncio.wait_for(self._connected.wait(), within)
        return self.self_ids[0]

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- reverse WebSocket server ------------------------------------------------------------------

    async def _handle_reverse(self, request: web.Request) -> web.StreamResponse:
        token = self.config.access_token
        if token is not None:
            given = _bearer(request.headers.get("Authorization")) or request.query.get("access_token")
            if not given:
                return web.Response(status=401, text="missing access token")
            if not same(given, token):
                return web.Response(status=403, text="wrong access token")
        ws = web.WebSocketResponse(
            max_msg_size=self.config.max_message_bytes, timeout=_CLOSE_TIMEOUT, autoping=True
        )
        await ws.prepare(request)
        self_id = (request.headers.get("X-Self-ID") or "").strip()
        role = (request.headers.get("X-Client-Role") or "Universal").strip()
        reason = None
        if not self_id:
            reason = "missing X-Self-ID header"
        elif role.lower() != "universal":
            reason = f"only the Universal client role is supported, got {role}"
        if reason is not None:
            log.warning("OneBot connection from %s refused: %s", request.remote, reason)
            await ws.close(code=WSCloseCode.POLICY_VIOLATION, message=reason.encode())
            return ws
        conn = _Connection(ws, self_id)
        previous = [c for c in self._conns if c.self_id == self_id and not c.closed]
        self._identify(conn, self_id)
        log.info("OneBot bot %s connected from %s", self_id, request.remote)
        for old in previous:
            self._replace(old, conn, request.remote)
        await self._serve(conn)
        return ws

    def _replace(self, old: _Connection, new: _Connection, remote: str | None) -> None:
        """Hand the bot account of `old` to `new`, its reconnection: after a network blip the old socket
        may be half-open, and refusing the new one left the bot deaf until the old one went stale.

        Actions waiting on `old` fail at once; the events it already delivered stay queued and are
        handled through `new`; `old` is closed in the background (a half-open one takes the close
        timeout)."""
        old.closed = True
        old.replaced_by = new
        new.nickname = new.nickname or old.nickname
        self._fail_pending(
            old, NotConnected(f"connection of bot {old.self_id} was replaced by a newer connection")
        )
        log.info(
            "OneBot bot %s reconnected from %s; closing its previous connection (replaced)",
            old.self_id,
            remote,
        )
        self._spawn(self._close(old, WSCloseCode.GOING_AWAY, _REPLACED))

    # -- forward WebSocket client ------------------------------------------------------------------

    async def _forward_loop(self) -> None:
        assert self._session is not None and self.config.forward_url
        delay = self.config.reconnect_initial
        headers = {"Authorization": f"Bearer {self.config.access_token}"} if self.config.access_token else {}
        while not self._stopping:
            try:
                ws = await self._session.ws_connect(
                    self.config.forward_url, headers=headers, max_msg_size=self.config.max_message_bytes
                )
            except (aiohttp.ClientError, OSError) as exc:
                log.warning("OneBot forward connect to %s failed: %s", self.config.forward_url, exc)
            else:
                delay = self.config.reconnect_initial
                conn = _Connection(ws, None)
                self._conns.append(conn)
                conn.login = self._spawn(self._learn_identity(conn))
                log.info("OneBot forward connection to %s open", self.config.forward_url)
                try:
                    await self._serve(conn)
                except Exception:  # the dial loop must outlive any one connection
                    log.exception("OneBot forward connection to %s failed", self.config.forward_url)
            if self._stopping:
                break
            wait = delay * random.uniform(0.5, 1.0)
            log.info("OneBot forward connection lost; reconnecting in %.1fs", wait)
            await asyncio.sleep(wait)
            delay = min(delay * self.config.reconnect_factor, self.config.reconnect_max)

    async def _learn_identity(self, conn: _Connection) -> None:
        try:
            data = await self._call(conn, "get_login_info", {}, self.config.reply_lookup_timeout)
        except OneBotError as exc:
            log.warning("get_login_info failed (%s); waiting for an event to learn the bot's id", exc)
            return
        if isinstance(data, Mapping):
            conn.nickname = str(data.get("nickname") or conn.nickname)
            user_id = data.get("user_id")
            if user_id is not None and conn.self_id is None:
                self._identify(conn, str(user_id))

    def _identify(self, conn: _Connection, self_id: str) -> None:
        conn.self_id = self_id
        if conn not in self._conns:
            self._conns.append(conn)
        self._connected.set()
        if conn.login is None:
            conn.login = self._spawn(self._learn_identity(conn))

    # -- per-connection reader ---------------------------------------------------------------------

    async def _serve(self, conn: _Connection) -> None:
        try:
            while not conn.ws.closed:
                try:
                    msg = await self._read_frame(conn.ws, self._stale_limit(conn))
                except TimeoutError:
                    log.warning(
                        "OneBot connection %s is stale (no frame for %.1fs); closing",
                        conn.self_id,
                        self._stale_limit(conn),
                    )
                    await self._close(conn, WSCloseCode.GOING_AWAY, b"stale connection")
                    break
                if msg.type is WSMsgType.TEXT:
                    self._on_frame_safely(conn, msg.data)
                elif msg.type is WSMsgType.BINARY:
                    self._on_frame_safely(conn, msg.data.decode("utf-8", errors="replace"))
                elif msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                    break
        finally:
            self._drop(conn)

    def _stale_limit(self, conn: _Connection) -> float:
        limit = self.config.stale_timeout
        if conn.heartbeat_ms:
            limit = min(limit, 3 * max(conn.heartbeat_ms, MIN_HEARTBEAT_MS) / 1000)
        return limit

    def _drop(self, conn: _Connection) -> None:
        conn.closed = True
        if conn in self._conns:
            self._conns.remove(conn)
        if not self.self_ids:
            self._connected.clear()
        self._fail_pending(conn, NotConnected(f"connection of bot {conn.self_id} closed"))
        log.info("OneBot connection of bot %s closed", conn.self_id)

    async def _close(self, conn: _Connection, code: int, message: bytes) -> None:
        conn.closed = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.ws.close(code=code, message=message), _CLOSE_TIMEOUT)

    def _fail_pending(self, conn: _Connection | None, error: Exception) -> None:
        for echo, (future, owner) in list(self._pending.items()):
            if conn is None or owner is conn:
                self._pending.pop(echo, None)
                if not future.done():
                    future.set_exception(error)

    def _on_frame_safely(self, conn: _Connection, raw: str) -> None:
        """Handle one frame; a frame that cannot be handled is logged and skipped, never the connection."""
        try:
            self._on_frame(conn, raw)
        except Exception:
            log.exception("OneBot frame skipped: handling it failed: %s", loggable(raw))

    def _on_frame(self, conn: _Connection, raw: str) -> None:
        try:
            data = untrusted_json.loads(raw)
        except json.JSONDecodeError as exc:
            log.warning("OneBot sent a frame that is not JSON (%s): %s", exc, loggable(raw))
            return
        if not isinstance(data, dict):
            log.warning("OneBot sent a JSON frame that is not an object: %s", loggable(raw))
            return
        if is_action_response(data):
            entry = self._pending.pop(str(data.get("echo")), None)
            if entry is None:
                log.debug("OneBot response with unknown echo %r", data.get("echo"))
            elif not entry[0].done():
                entry[0].set_result(data)
            return
        if conn.self_id is None and data.get("self_id") is not None:
            self._identify(conn, str(data["self_id"]))
        if post_type(data) == "meta_event":
            self._on_meta(conn, MetaEvent.from_dict(data))
            return
        self._in_flight.begin()
        self._queue.put_nowait((conn, data))

    def _on_meta(self, conn: _Connection, meta: MetaEvent) -> None:
        if meta.meta_event_type == "heartbeat":
            if meta.interval_ms:
                conn.heartbeat_ms = meta.interval_ms
            if meta.online is False:
                log.warning("OneBot bot %s reports it is offline", conn.self_id)
        elif meta.meta_event_type == "lifecycle":
            log.info("OneBot bot %s lifecycle: %s", conn.self_id, meta.sub_type)

    # -- events -> handler -------------------------------------------------------------------------

    async def _dispatch_loop(self) -> None:
        while True:
            conn, data = await self._queue.get()
            try:
                await self._dispatch(conn, data)
            except Exception:
                log.exception("handling a OneBot event failed: %.300s", json.dumps(data, ensure_ascii=False))
            finally:
                self._in_flight.end()

    async def _dispatch(self, conn: _Connection, data: dict[str, Any]) -> None:
        conn = conn.current()  # an event of a replaced connection is answered through its replacement
        self_id = conn.self_id or as_id(data.get("self_id"))  # the account that received the event
        kind = post_type(data)
        event: InboundEvent | None
        if kind == "notice":
            event = self._reader.notice(data, account=self_id or "", accounts=self.self_ids)
        elif kind in ("message", "message_sent"):
            if conn.login is not None and not conn.login.done():
                # the first events should already know the bot's name for rendering "@bot"
                await asyncio.wait({conn.login}, timeout=self.config.reply_lookup_timeout)
            event = await self._reader.message(
                data,
                account=self_id,
                accounts=self.self_ids,
                nickname=conn.nickname,
                get_msg=functools.partial(self._get_msg, conn),
            )
        else:
            log.debug("OneBot %s event ignored", kind)
            return
        if event is not None and self._handler is not None:
            await self._handler(event)

    async def _get_msg(self, conn: _Connection, message_id: str) -> Any:
        """The message a reply points to, for the reader; None when `get_msg` failed."""
        try:
            return await self._call(
                conn, "get_msg", {"message_id": maybe_int(message_id)}, self.config.reply_lookup_timeout
            )
        except OneBotError as exc:
            log.debug("get_msg %s for a reply failed: %s", message_id, exc)
            return None

    # -- actions -----------------------------------------------------------------------------------

    async def call_action(
        self,
        action: str,
        params: Mapping[str, Any] | None = None,
        *,
        self_id: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the protocol's echo timeout, as OneBot SDKs name it
    ) -> Any:
        """Call a OneBot action and return its `data`.

        Raises `NotConnected` without a live connection, `ActionTimeout` when no response with our
        `echo` arrives in time, `ActionFailed` when the implementation answers `status: failed`.
        """
        conn = self._pick(self_id)
        return await self._call(conn, action, dict(params or {}), timeout or self.config.action_timeout)

    def _pick(self, self_id: str | None) -> _Connection:
        live = [c for c in self._conns if not c.closed]
        wanted = self_id or self.config.self_id
        if wanted is not None:
            for conn in live:
                if conn.self_id == wanted:
                    return conn
            if self_id is not None or len(live) != 1:
                raise NotConnected(f"bot {wanted} is not connected")
        if not live:
            raise NotConnected("no OneBot implementation is connected")
        return live[0]

    async def _call(self, conn: _Connection, action: str, params: dict[str, Any], wait_s: float) -> Any:
        echo = f"qunyi:{next(self._echo)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[echo] = (future, conn)
        try:
            try:
                await conn.ws.send_json({"action": action, "params": params, "echo": echo})
            except (ConnectionError, RuntimeError, aiohttp.ClientError) as exc:
                raise NotConnected(f"cannot send {action!r}: {exc}") from exc
            try:
                response = await asyncio.wait_for(future, wait_s)
            except TimeoutError as exc:
                raise ActionTimeout(f"OneBot action {action!r} got no response in {wait_s:g}s") from exc
        finally:
            self._pending.pop(echo, None)
        status = response.get("status")
        retcode = response.get("retcode")
        if status == "failed" or (status not in ("ok", "async") and retcode not in (0, 1)):
            raise ActionFailed(action, response)
        return response.get("data")

    # -- outbound ----------------------------------------------------------------------------------

    async def send_text(
        self,
        chat_id: str,
        text: str,
        *,
        chat_kind: ChatKind = ChatKind.GROUP,
        reply_to: str | None = None,
    ) -> ChatMessage:
        """Send `text` (literally: no CQ codes are interpreted) and return the bot's stored message."""
        chat_id = chat_to_send_to(chat_id, chat_kind)
        owner = self._reader.owner(chat_kind, chat_id)
        conn = self._pick(owner if owner in self.self_ids else None)
        if conn.self_id is None:
            await self._learn_identity(conn)
        if conn.self_id is None:
            raise NotConnected("the connected implementation has not told its self id yet")
        action, params = send_action(
            chat_id, text, chat_kind=chat_kind, reply_to=reply_to, temp_group=self._reader.temp_group(chat_id)
        )
        data = await self._call(conn, action, params, self.config.action_timeout)
        sent = sent_message(
            action,
            data,
            chat_id,
            text,
            chat_kind=chat_kind,
            reply_to=reply_to,
            account=conn.self_id,
            nickname=conn.nickname,
            time=self._clock.now(),
        )
        return self._reader.sent(sent)


def _bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() in ("bearer", "token") and value.strip():
        return value.strip()
    return None
