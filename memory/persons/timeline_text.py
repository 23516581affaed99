"""The timeline lines people's memory writes itself about names: a group card changed, a name declared
in chat. Written by the per-message observer, in one (Chinese) form whatever the chat's language; read
back where stored names are cleaned, which rewrites the names inside them, and where a card shows them
in an English chat (`shown`)."""

from __future__ import annotations

import re

from memory.text.language import Language

_DECLARED_VERBS = {"self": "自称", "others": "被叫作"}
_CARD_CHANGE = re.compile(r"群名片改为「(?P<card>.*)」\(原「(?P<previous>.*)」\)", re.DOTALL)
_DECLARED_EN = {"self": "calls themselves “{}”", "others": "is called “{}”"}
_DECLARED = re.compile(rf"(?P<verb>{'|'.join(_DECLARED_VERBS.values())})「(?P<alias>.*)」", re.DOTALL)


def card_change(card: str, previous: str) -> str:
    """The line for a group card that changed from `previous` to `card` (both cleaned names)."""
    return f"群名片改为「{card}」(原「{previous}」)"


def declared(source: str, alias: str) -> str:
    """The line for a name declared in chat: `source` "self" (they call themselves `alias`) or
    "others" (others call them so)."""
    return f"{_DECLARED_VERBS[source]}「{alias}」"


def read_card_change(line: str) -> tuple[str, str] | None:
    """(card, previous) of a `card_change` line, or None for another line (or one cut short)."""
    found = _CARD_CHANGE.fullmatch(line)
    return None if found is None else (found["card"], found["previous"])


def read_declared(line: str) -> tuple[str, str] | None:
    """(source, alias) of a `declared` line, or None for another line (or one cut short)."""
    found = _DECLARED.fullmatch(line)
    if found is None:
        return None
    source = next(s for s, verb in _DECLARED_VERBS.items() if verb == found["verb"])
    return source, found["alias"]


def shown(line: str, language: Language) -> str:
    """A timeline line as a card in a chat of `language` shows it: one written by `card_change` or
    `declared` in English words for an English chat; any other line (an event learnt from what a member
    said) as it is."""
    if language != "en":
        return line
    if changed := read_card_change(line):
        card, previous = changed
        return f"group card changed to “{card}” (was “{previous}”)"
    if declared_name := read_declared(line):
        source, alias = declared_name
        return _DECLARED_EN[source].format(alias)
    return line
