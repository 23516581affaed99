"""Character classes and the boundary rule shared by discovery and matching.

A term may be Chinese ("绝绝子"), Latin ("yyds", "he tui") or mixed ("C牛马O", "u1s1", "i人"). Chinese
has no word boundaries, so a Chinese edge of a term may sit anywhere; a Latin edge must sit on a word
boundary, so "ok" is not found inside "book" and "he" not inside "the".
"""

from __future__ import annotations

_CJK_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2FA1F),
    (0x3040, 0x30FF),  # kana: Japanese loans are written like CJK, without spaces
)


def is_cjk(char: str) -> bool:
    """True for a CJK ideograph or kana."""
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in _CJK_RANGES)


def is_latin(char: str) -> bool:
    """True for a letter or digit of a space-separated script (Latin, digits, Cyrillic…)."""
    return char.isalnum() and not is_cjk(char)


def is_word(char: str) -> bool:
    """True for a character a discovered term may consist of (letters and digits of any script)."""
    return char.isalnum()


def latin_edges_ok(text: str, start: int, end: int) -> bool:
    """Whether [start, end) of `text` does not cut a Latin word at either end."""
    if start > 0 and is_latin(text[start]) and is_latin(text[start - 1]):
        return False
    return not (end < len(text) and is_latin(text[end - 1]) and is_latin(text[end]))


def word_runs(text: str) -> list[tuple[int, int]]:
    """Maximal [start, end) stretches of word characters in (normalised) `text`.

    A single space between two Latin characters stays inside a run ("he tui"), so multi-word Latin
    terms can be found; any other non-word character (punctuation, emoji, spaces next to CJK) ends it.
    """
    runs: list[tuple[int, int]] = []
    start = -1
    n = len(text)
    for i, char in enumerate(text):
        if is_word(char):
            if start < 0:
                start = i
            continue
        inner_space = (
            char == " " and start >= 0 and 0 < i < n - 1 and is_latin(text[i - 1]) and is_latin(text[i + 1])
        )
        if inner_space:
            continue
        if start >= 0:
            runs.append((start, i))
            start = -1
    if start >= 0:
        runs.append((start, n))
    return runs
