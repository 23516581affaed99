"""Whether text can be stored: a lone surrogate (JSON can escape one, and a command-line argument that is
not UTF-8 arrives holding some) has no UTF-8 form, so SQLite and every file refuse it."""

from __future__ import annotations


def lone_surrogate_at(text: str) -> int | None:
    """The index of the first lone surrogate in `text`, or None when it is valid Unicode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None
