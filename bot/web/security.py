"""Who may use the console: loopback binding, the access token, the session cookie and CSRF tokens.

Only the standard library here (the settings module imports `check_host`). Every comparison of a
secret is constant-time. The cookie and the CSRF token are derived from the access token with HMAC, so
neither reveals the token and both change when it changes.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets

COOKIE = "qunyi_session"
CSRF_FIELD = "_csrf"
CSRF_HEADER = "X-CSRF-Token"
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


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless remote access is explicitly allowed."""
    if not allow_remote and not is_loopback(host):
        raise ValueError(
            f"host {host!r} is not a loopback address; the console listens on loopback only "
            "unless [web] allow_remote = true"
        )


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


class Credentials:
    """The secrets of one console: the access token and the values derived from it."""

    def __init__(self, token: str) -> None:
        self.rotate(token)

    def rotate(self, token: str) -> None:
        """Take a new access token; sessions and CSRF tokens of the old one stop working."""
        if not token:
            raise ValueError("the console needs a non-empty access token")
        self.token = token
        self.session = self._derive("session")
        self.csrf = self._derive("csrf")

    def _derive(self, purpose: str) -> str:
        return hmac.new(
            self.token.encode("utf-8"), f"qunyi-web:{purpose}".encode(), hashlib.sha256
        ).hexdigest()

    def bearer_ok(self, header: str | None) -> bool:
        """True for `Authorization: Bearer <token>`."""
        scheme, _, value = (header or "").partition(" ")
        return scheme.lower() == "bearer" and same(value.strip(), self.token)

    def token_ok(self, value: str | None) -> bool:
        return same(value, self.token)

    def cookie_ok(self, value: str | None) -> bool:
        return same(value, self.session)

    def csrf_ok(self, value: str | None) -> bool:
        return same(value, self.csrf)
