"""Characters that show nothing or only reorder what is around them: zero-width characters and
bidirectional controls. In a name they let one member pass for another (a zero-width space makes
"小\u200b红" look like "小红" without matching it) or turn the line that shows the name around (an
RTL override), so names lose them; message text keeps them (it is stored as sent)."""

from __future__ import annotations

import regex

# ZWSP, ZWNJ, LRM, RLM, the embeddings and overrides, word joiner and invisible operators, the isolates,
# BOM, the Arabic letter mark and the Mongolian vowel separator.
_INVISIBLE = "\u200b\u200c\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u061c\u180e"
# A zero-width joiner is kept where it joins two emoji into one (👨‍👩‍👧, 🏳️‍🌈, 👩🏽‍💻), and dropped
# elsewhere.
_STRAY_JOINER = (
    r"(?<!\p{Extended_Pictographic}\p{Grapheme_Cluster_Break=Extend}*)\u200d"
    r"|\u200d(?!\p{Extended_Pictographic})"
)
_PATTERN = regex.compile(rf"[{_INVISIBLE}]|{_STRAY_JOINER}")


def drop_invisible(text: str) -> str:
    """`text` without zero-width and bidirectional control characters; a zero-width joiner inside an
    emoji sequence stays, so no emoji is split. Empty when `text` held nothing else."""
    return _PATTERN.sub("", text)
