"""Opening a listening socket (the OneBot reverse server, the Telegram webhook, the playground, the web
console) with an error that says which setting to change when the address cannot be taken."""

from __future__ import annotations

import errno
import os

from aiohttp import web


class CannotListen(OSError):
    """The address of a listening part cannot be taken (in use, not allowed, no such address); the
    message names the address and the setting that chose it."""


async def listen(runner: web.AppRunner, host: str, port: int, *, host_key: str, port_key: str) -> web.TCPSite:
    """Start serving `runner` on `host`:`port`, which the settings `host_key` and `port_key` chose (e.g.
    "[web] host", "[web] port"); raise CannotListen naming the address and the setting to change when
    that fails: "Address already in use" alone left the user guessing which server it was and what to
    change."""
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if exc.errno == errno.EADDRINUSE:
            advice = f"another program holds that port: change {port_key}"
        else:
            advice = f"check {host_key} and {port_key}"
        raise CannotListen(f"cannot listen on {address} ({reason}); {advice}") from None
    return site
