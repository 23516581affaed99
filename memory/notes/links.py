"""The `[[Name]]` link and `![[Name]]` embed syntax: finding links and rewriting their targets."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from memory.notes.names import InvalidNoteName, clean_name

# `[[target]]`, optionally preceded by `!` for an embed. A target holds no brackets and no newline.
LINK = re.compile(r"(?P<embed>!?)\[\[(?P<target>[^\[\]\n]+)\]\]")


@dataclass(frozen=True, slots=True)
class Link:
    """One link occurrence: the canonical target name and whether it is an embed (`![[...]]`)."""

    target: str
    embed: bool


def iter_links(text: str) -> Iterator[Link]:
    """Yield every link in `text` whose target is a valid note name, in order of appearance.

    Targets that can never be a note (e.g. `[[a/b]]`) are skipped: they are text, not links.
    """
    for match in LINK.finditer(text):
        try:
            target = clean_name(match["target"])
        except InvalidNoteName:
            continue
        yield Link(target, bool(match["embed"]))


def link_targets(text: str) -> frozenset[str]:
    """The distinct target names that `text` links or embeds."""
    return frozenset(link.target for link in iter_links(text))


def rewrite_target(text: str, old: str, new: str) -> str:
    """Return `text` with every `[[old]]` and `![[old]]` pointing at `new` instead.

    Targets are compared in canonical form, so `[[ old ]]` is rewritten too.
    """

    def swap(match: re.Match[str]) -> str:
        try:
            target = clean_name(match["target"])
        except InvalidNoteName:
            return match[0]
        return f"{match['embed']}[[{new}]]" if target == old else match[0]

    return LINK.sub(swap, text)
