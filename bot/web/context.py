"""What every console handler shares: the App and credentials on the web app, and small request
helpers (integer parameters, the chat in the path, the acting admin's name)."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from multidict import MultiMapping

from bot.app import App
from bot.web.security import Credentials
from memory.models import Chat
from memory.service import ChatRef
from memory.storage.sql import MAX_INT
from memory.text.truncate import truncate
from memory.token_throttle import TokenThrottle

APP_KEY = web.AppKey("qunyi_app", App)
CREDENTIALS_KEY = web.AppKey("qunyi_credentials", Credentials)
REMOTE_KEY = web.AppKey("qunyi_allow_remote", bool)
THROTTLE_KEY = web.AppKey("qunyi_login_throttle", TokenThrottle)
CSRF_KEY = web.RequestKey("qunyi_csrf", str)
ACTOR = "web"
UNPLACED_MERGE = (
    "it may have been merged into another chat by an older Qunyi, which kept no old id to follow: "
    "`qunyi chats list` shows the chats merged into each one (merged_from)"
)


def app_of(request: web.Request) -> App:
    return request.app[APP_KEY]


def int_param(value: str | None, name: str, default: int | None = None, minimum: int = 0) -> int | None:
    """An optional integer from a query or form value; a clear 400 when it is not one or out of range."""
    if value is None or value.strip() == "":
        return default
    try:
        number = int(value.strip())
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} must be a whole number, not {truncate(value, 20)!r}") from None
    if number < minimum:
        raise web.HTTPBadRequest(text=f"{name} must be at least {minimum}")
    if number > MAX_INT:
        raise web.HTTPBadRequest(text=f"{name} must be at most {MAX_INT}")
    return number


def seen_revision(data: MultiMapping[Any]) -> int | None:
    """The revision of what a form edits (a jargon entry, a person's name) as its page showed it, from
    the form's hidden `revision` field: None when the form names none (a script's POST); a 400 when it
    is no whole number in range. The edit passes it on, and is refused (409) when it changed since."""
    raw = data.get("revision")
    return int_param(raw, "revision") if isinstance(raw, str) else None


def path_int(request: web.Request, name: str) -> int:
    value = int_param(request.match_info[name], name)
    assert value is not None
    return value


async def chat_of(request: web.Request, name: str = "chat_id") -> ChatRef:
    """The chat named by the path (404 when unknown)."""
    return await chat_by_id(request, path_int(request, name))


async def chat_by_id(request: web.Request, chat_id: int) -> ChatRef:
    """The chat with this database id (404 when unknown). A chat merged into another sends its pages
    to that chat's (`merged_away`); when merges without ids were made, the 404 says the chat may be one."""
    async with app_of(request).db.read() as session:
        row = await session.get(Chat, chat_id)
    if row is None:
        into = await app_of(request).memory.merged_into(chat_id)
        if into is not None:
            raise merged_away(request, chat_id, into)
        if await app_of(request).memory.has_unplaced_merges():
            raise web.HTTPNotFound(text=f"no chat {chat_id}; {UNPLACED_MERGE}")
        raise web.HTTPNotFound(text=f"no chat {chat_id}")
    return ChatRef(row.id, row.platform, row.platform_chat_id, row.name)


def merged_away(request: web.Request, chat_id: int, into: ChatRef) -> web.HTTPException:
    """The answer for a page of a chat merged into `into`: a redirect to the same page of `into`
    (307, so a form posted from a page opened before the merge is posted there, with its checks) when
    the path names the chat; else a 404 saying where it went."""
    named = f"/chats/{request.match_info.get('chat_id')}"
    path = request.rel_url.raw_path
    if "chat_id" in request.match_info and (path == named or path.startswith(named + "/")):
        query = request.rel_url.raw_query_string
        target = f"/chats/{into.id}{path[len(named) :]}" + (f"?{query}" if query else "")
        return web.HTTPTemporaryRedirect(target)  # starts with /chats/<id>: stays on the console
    where = f"chat {into.id} ({into.key}): see /chats/{into.id}"
    return web.HTTPNotFound(text=f"chat {chat_id} ({into.merged_from}) was merged into {where}")


def chat_title(chat: ChatRef) -> str:
    return f"{chat.name} ({chat.key})" if chat.name else chat.key
