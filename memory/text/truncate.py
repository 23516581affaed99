"""Cutting text to a length without splitting a character or a grapheme cluster."""

from collections.abc import Callable

import regex

_GRAPHEME = regex.compile(r"\X")


def truncate(text: str, max_chars: int, ellipsis: str = "…") -> str:
    """Return `text` cut to at most `max_chars` code points, ending on a grapheme boundary.

    When a cut happens, `ellipsis` is appended within the limit.
    """
    if max_chars <= 0:
        return ""
    if len(text) <= max_chars:
        return text
    room = max_chars - len(ellipsis)
    if room <= 0:
        return ellipsis[:max_chars]
    kept = 0
    for match in _GRAPHEME.finditer(text):
        if match.end() > room:
            break
        kept = match.end()
    return text[:kept] + ellipsis


def grapheme_start(text: str, index: int) -> int:
    """The start of the grapheme cluster holding `text[index]` (`index` itself on a boundary or past the
    end), so that a slice from it never begins inside an emoji sequence or after its base character."""
    if index <= 0 or index >= len(text):
        return max(0, index)
    for match in _GRAPHEME.finditer(text):
        if match.end() > index:
            return match.start()
    return index


def truncate_to_fit(text: str, fits: Callable[[str], bool], max_chars: int) -> str:
    """The longest `truncate(text, n)`, n at most `max_chars`, that `fits` (a cut's size in another
    measure than code points: UTF-16 units, tokens); `fits` must grow no more lenient as cuts grow."""
    low, high = 0, max_chars
    while low < high:
        middle = (low + high + 1) // 2
        if fits(truncate(text, middle)):
            low = middle
        else:
            high = middle - 1
    return truncate(text, low)
