"""Expanding `![[Name]]` embeds into a note's text to a depth, and collapsing expansions back.

An expanded embed is written between markers, one per line:

    ![[Name]]start

    <content of Name, itself expanded one level less deep>

    ![[Name]]end

An embed of a note that is already being expanded further up (a cycle) and an embed of a note that
does not exist are still wrapped in markers, with a one-line explanation in parentheses as the body,
so the reader sees why nothing was inserted. Embeds below the requested depth stay as `![[Name]]`.

The blocks inserted into one expansion hold at most MAX_EXPANDED_CHARS characters in all (a note
embedding another many times, a few levels deep, would otherwise multiply into gigabytes). The
first embed past that limit gets a block explaining it; the later ones stay as `![[Name]]`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memory.notes.links import LINK
from memory.notes.names import InvalidNoteName, clean_name

MAX_DEPTH = 5
CYCLE_NOTE = "(cycle: {name} is already expanded above)"
MISSING_NOTE = "(no note named {name} yet)"
MAX_EXPANDED_CHARS = 200_000
TOO_LONG_NOTE = (
    "(not expanded: the embedded notes would pass {limit} characters; read {name} on its own; "
    "later embeds are left as they are)"
)

# The start and end markers of an expanded block. A name can nest inside itself (the marker of a
# cut cycle sits inside the block of the note it points back to), so blocks are paired by nesting.
_MARKER = re.compile(r"!\[\[(?P<start>[^\[\]\n]+)\]\]start\n|\n!\[\[(?P<end>[^\[\]\n]+)\]\]end")

Lookup = Callable[[str], str | None]


@dataclass(slots=True)
class _Budget:
    """Characters of inserted blocks still allowed in one expansion, and whether it ran out."""

    limit: int
    remaining: int
    exhausted: bool = False


def expand(name: str, text: str, depth: int, lookup: Lookup, limit: int = MAX_EXPANDED_CHARS) -> str:
    """Return `text` (the content of note `name`) with embeds expanded `depth` levels deep.

    `lookup(name)` returns a note's content or None when it does not exist. Depth 0 returns the text
    unchanged; depth is capped at MAX_DEPTH, and the inserted blocks at `limit` characters in all.
    """
    return _expand(text, min(max(depth, 0), MAX_DEPTH), lookup, (name,), _Budget(limit, limit))


def _expand(text: str, depth: int, lookup: Lookup, ancestors: tuple[str, ...], budget: _Budget) -> str:
    if depth <= 0:
        return text

    def replace(match: re.Match[str]) -> str:
        if not match["embed"]:
            return match[0]
        try:
            target = clean_name(match["target"])
        except InvalidNoteName:
            return match[0]
        if budget.exhausted:
            return match[0]
        content = None if target in ancestors else lookup(target)
        if content is not None:
            body = content
        else:
            body = (CYCLE_NOTE if target in ancestors else MISSING_NOTE).format(name=target)
        cost = len(_block(target, body))
        if cost > budget.remaining:
            budget.exhausted = True
            return _block(target, TOO_LONG_NOTE.format(limit=budget.limit, name=target))
        budget.remaining -= cost
        if content is not None:
            body = _expand(content, depth - 1, lookup, (*ancestors, target), budget).strip("\n")
        return _block(target, body)

    return LINK.sub(replace, text)


def _block(name: str, body: str) -> str:
    return f"![[{name}]]start\n\n{body}\n\n![[{name}]]end"


def collapse(text: str) -> str:
    """Undo `expand`: replace every expanded block by its plain `![[Name]]` embed.

    Applied on write, so a model that reads an expanded note and writes it back does not copy the
    embedded notes into it. Markers are paired as nested brackets; a marker left without its partner
    (e.g. after an edit) stays as text.
    """
    open_blocks: list[tuple[str, int]] = []
    blocks: list[tuple[int, int, str]] = []
    for marker in _MARKER.finditer(text):
        if marker["start"] is not None:
            open_blocks.append((marker["start"], marker.start()))
            continue
        names = [name for name, _ in open_blocks]
        if marker["end"] not in names:
            continue
        level = len(names) - 1 - names[::-1].index(marker["end"])
        blocks.append((open_blocks[level][1], marker.end(), marker["end"]))
        del open_blocks[level:]
    parts: list[str] = []
    position = 0
    for begin, end, name in sorted(blocks):
        if begin < position:  # inside a block already collapsed
            continue
        parts.append(f"{text[position:begin]}![[{name}]]")
        position = end
    parts.append(text[position:])
    return "".join(parts)
