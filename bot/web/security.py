"""Who may use the console: loopback binding, the access token, the session cookie, CSRF tokens and
the sealed one-shot message a redirect leaves for the page it leads to.

Only the standard library and `memory.local_access` (the loopback and token rules the web playground
adapter shares) here: the settings module imports `check_host`. Every comparison of a secret is
constant-time. The cookie and the CSRF token are derived from the access token with HMAC, so
neither reveals the token and both change when it changes. A flash message is sealed with a key derived
alike: cookies are not kept apart by port, so another program on this machine could set one, but not one
the console shows.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from memory.local_access import bearer_matches, is_loopback, new_token, refuse_remote, same

__all__ = [
    "COOKIE",
    "CSRF_FIELD",
    "CSRF_HEADER",
    "FLASH_COOKIE",
    "Credentials",
    "check_host",
    "is_loopback",
    "new_token",
]

COOKIE = "qunyi_session"
FLASH_COOKIE = "qunyi_flash"
CSRF_FIELD = "_csrf"
CSRF_HEADER = "X-CSRF-Token"


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless remote access is explicitly allowed."""
    refuse_remote(host, allow_remote, server="the console", setting="[web] allow_remote")


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
        self._flash = self._derive("flash")

    def _derive(self, purpose: str) -> str:
        return hmac.new(
            self.token.encode("utf-8"), f"qunyi-web:{purpose}".encode(), hashlib.sha256
        ).hexdigest()

    def _seal_of(self, data: str) -> str:
        return hmac.new(self._flash.encode("ascii"), data.encode("ascii"), hashlib.sha256).hexdigest()

    def seal(self, message: str) -> str:
        """`message` as a cookie value: its UTF-8 in URL-safe base64, then `.` and an HMAC of that."""
        data = base64.urlsafe_b64encode(message.encode("utf-8")).decode("ascii")
        return f"{data}.{self._seal_of(data)}"

    def unseal(self, value: str | None) -> str | None:
        """The message `seal` made `value` of, with this token; None for anything else (forged,
        tampered with, sealed with an earlier token, malformed)."""
        data, dot, mac = (value or "").partition(".")
        if not dot or not data.isascii() or not same(mac, self._seal_of(data)):
            return None
        try:
            return base64.urlsafe_b64decode(data).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None

    def bearer_ok(self, header: str | None) -> bool:
        """True for `Authorization: Bearer <token>`."""
        return bearer_matches(header, self.token)

    def token_ok(self, value: str | None) -> bool:
        return same(value, self.token)

    def cookie_ok(self, value: str | None) -> bool:
        return same(value, self.session)

    def csrf_ok(self, value: str | None) -> bool:
        return same(value, self.csrf)
