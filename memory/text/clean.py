"""Text as it is kept: without the characters no store or terminal should hold."""

import unicodedata


def clean_text(text: str) -> str:
    """Drop NULs and other control characters (keeping newlines and tabs) and lone surrogates."""
    if text.isprintable() and "\ud800" not in text:
        return text
    kept = []
    for ch in text:
        if ch in "\n\t":
            kept.append(ch)
            continue
        category = unicodedata.category(ch)
        if category == "Cs" or (category == "Cc"):
            continue
        kept.append(ch)
    return "".join(kept)
