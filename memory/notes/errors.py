"""Errors raised by note operations; each message is safe to show to a user or a model."""

from __future__ import annotations


class NoteError(Exception):
    """A note operation that cannot be done as asked; nothing was changed."""


class NoteNotFound(NoteError):
    """The named note does not exist."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no note named {name!r}")
        self.name = name


class PassageNotFound(NoteError):
    """The passage to extract does not occur in the source note."""

    def __init__(self, source: str) -> None:
        super().__init__(f"the passage does not occur in note {source!r}")
        self.source = source


class NoteChanged(NoteError):
    """The note no longer holds the version an edit started from (it changed or was deleted)."""

    def __init__(self, name: str, current: str | None) -> None:
        state = "was deleted" if current is None else "was changed"
        super().__init__(f"note {name!r} {state} since this edit started; nothing was saved")
        self.name = name
        self.current = current
