"""Note names: the one check that keeps a name (often from a model's tool call) inside its folder."""

from __future__ import annotations

import unicodedata

from memory.text import shown_name

MAX_NAME_CHARS = 100
# A file name is at most 255 bytes on common filesystems; leave room for ".md" and temp-file affixes.
MAX_NAME_BYTES = 200
# Characters a name may not hold: path separators, and the brackets of the [[link]] syntax
# (a name holding "]]" could never be linked to).
_FORBIDDEN = frozenset("/\\[]")


class InvalidNoteName(ValueError):
    """A note name that cannot be used; the message says why (the name shown cut, as a rename refusal
    shows it: a model's tool call may pass thousands of characters)."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"invalid note name {shown_name(name)!r}: {reason}")
        self.name = name
        self.reason = reason


def clean_name(name: str) -> str:
    """Return the canonical form of `name` (surrounding whitespace dropped, Unicode NFC).

    Raises InvalidNoteName when the name is empty, too long, starts with a dot, contains `..`,
    a path separator, `[` or `]`, a control or line-break character, or a lone surrogate.
    """
    if not isinstance(name, str):
        raise InvalidNoteName(repr(name), "not a string")
    cleaned = unicodedata.normalize("NFC", name.strip())
    if any(unicodedata.category(char) == "Cs" for char in cleaned):
        raise InvalidNoteName(name, "not valid Unicode (a lone surrogate)")
    if not cleaned:
        raise InvalidNoteName(name, "empty")
    if len(cleaned) > MAX_NAME_CHARS or len(cleaned.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidNoteName(name, f"longer than {MAX_NAME_CHARS} characters or {MAX_NAME_BYTES} bytes")
    if cleaned.startswith("."):
        raise InvalidNoteName(name, "starts with a dot")
    if ".." in cleaned:
        raise InvalidNoteName(name, "contains '..'")
    for char in cleaned:
        if char in _FORBIDDEN:
            raise InvalidNoteName(name, f"contains {char!r}")
        if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            raise InvalidNoteName(name, "contains a control or line-break character")
    return cleaned


def is_valid_name(name: str) -> bool:
    """True when `name` is already canonical and valid (used for file names found on disk)."""
    try:
        return clean_name(name) == name
    except InvalidNoteName:
        return False
