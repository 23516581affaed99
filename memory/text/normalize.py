"""One normal form for matching: NFKC (full-width → half-width), case-folded, trimmed."""

import unicodedata


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()
