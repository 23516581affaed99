"""Who may reach a local HTTP server Qunyi runs: loopback addresses and the access token.

Shared by the admin console (`bot/web`) and the web playground adapter (`adapters/playground`): the
adapters may import only `memory/`, so these few standard-library rules live here rather than being
copied. Every comparison of a secret is constant-time.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets

LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and the name localhost."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def refuse_remote(host: str, allow_remote: bool, *, server: str, setting: str) -> None:
    """Raise ValueError for a non-loopback `host` unless remote access is explicitly allowed; the
    message names the `server` and the `setting` that allows it."""
    if not allow_remote and not is_loopback(host):
        raise ValueError(
            f"host {host!r} is not a loopback address; {server} listens on loopback only "
            f"unless {setting} = true"
        )


def host_header_is_loopback(header: str | None) -> bool:
    """Whether an HTTP Host header (`127.0.0.1:8766`, `[::1]:8766`, `localhost`) names a loopback
    host: a page of another site that a DNS rebinding points at 127.0.0.1 still sends its own name."""
    value = (header or "").strip()
    if value.startswith("["):
        name = value[1 : value.find("]")] if "]" in value else ""
    elif value.count(":") == 1:
        name = value.split(":", 1)[0]
    else:
        name = value
    return bool(name) and is_loopback(name)


def new_token() -> str:
    """A random access token (for when none is configured)."""
    return secrets.token_urlsafe(24)


def same(given: str | None, expected: str) -> bool:
    """Constant-time equality of two secrets (False when `given` is missing).

    A header with bytes that are not UTF-8 arrives with surrogates in it; it is compared (and never
    matches) rather than failing to encode.
    """
    if not given:
        return False
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def bearer_matches(header: str | None, token: str) -> bool:
    """True for an `Authorization: Bearer <token>` header carrying `token`."""
    scheme, _, value = (header or "").partition(" ")
    return scheme.lower() == "bearer" and same(value.strip(), token)
