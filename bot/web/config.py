"""The settings in force (secrets masked) and a reload button: a broken file is rejected with its
error and the old settings stay in force."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from bot.config import ConfigError
from bot.config.loader import load_settings
from bot.web.context import app_of
from bot.web.html import Safe, done, form, h, join, page

routes = web.RouteTableDef()
SECRET_NAMES = ("api_key", "token", "secret", "password")
MASK = "•••• (set)"


def is_secret(key: str) -> bool:
    """True for keys holding credentials (`api_key`, `token`, `access_token`, `webhook_secret`...);
    not `api_key_env` (names a variable) nor `total_tokens` (a budget)."""
    name = key.lower()
    return name in SECRET_NAMES or name.endswith(tuple(f"_{word}" for word in SECRET_NAMES))


def masked(value: Any, key: str = "") -> Any:
    """The settings tree with every non-empty secret replaced by a mask."""
    if isinstance(value, dict):
        return {k: masked(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v, key) for v in value]
    if is_secret(key) and value:
        return MASK
    return value


def _render(tree: dict[str, Any], path: str = "") -> Safe:
    scalars = {k: v for k, v in tree.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in tree.items() if isinstance(v, dict)}
    lines = [h("[{}]\n", path)] if path and scalars else []
    lines += [h("{} = {}\n", k, json.dumps(v, ensure_ascii=False)) for k, v in scalars.items()]
    if scalars:
        lines.append(Safe("\n"))
    lines += [_render(v, f"{path}.{k}" if path else k) for k, v in tables.items()]
    return join(lines)


@routes.get("/config")
async def config_page(request: web.Request) -> web.Response:
    app = app_of(request)
    source = str(app.config.path) if app.config.path else "built-in defaults (no config file)"
    settings = masked(app.settings.model_dump(mode="json"))
    body = h(
        "<p>Source: {} (plus QUNYI__ environment overrides). Secrets are masked.</p>{}<pre>{}</pre>",
        source,
        form(request, "/config/reload", Safe(""), "Reload config from the file"),
        _render(settings),
    )
    return page(request, "Config", body)


WEB_RESTART_ONLY = ("web.host", "web.port", "web.allow_remote")
"""What the console reads once at start besides the bot's start-only settings (the token follows)."""


def reload_config(request: web.Request) -> tuple[bool, str]:
    """Re-read the config file through the store; (True, "") when new settings are in force, else
    (False, why) with the old settings kept."""
    store = app_of(request).config
    try:
        # Validate first to be able to say why a file is refused; the store then swaps it in.
        load_settings(store.path)
    except ConfigError as exc:
        store.reload()  # records the failure in the log and keeps the settings in force
        return False, str(exc)
    if store.reload():
        return True, ""
    return False, "the file changed while reloading and is now invalid; see the log"


@routes.post("/config/reload")
async def config_reload(request: web.Request) -> web.Response:
    ok, why = reload_config(request)
    if ok:
        pending = app_of(request).restart_pending(*WEB_RESTART_ONLY)
        if pending:
            later = ", ".join(pending)
            raise done(request, "/config", f"config reloaded, but {later} take effect only after a restart")
        raise done(request, "/config", "config reloaded: the new settings are in force")
    body = h(
        '<p class="error">Reload refused; the settings in force are unchanged.\n\n{}</p><p><a href="/config">'
        "Back to the config</a></p>",
        why,
    )
    return page(request, "Config reload refused", body, status=400)
