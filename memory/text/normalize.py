"""One normal form for matching: NFKC (full-width → half-width), case-folded, trimmed."""

import unicodedata

# Typographic apostrophes that phones and word processors type for ' ("I’m", "don’t"); NFKC keeps them.
_APOSTROPHES = str.maketrans(dict.fromkeys("\u2019\u02bc\uff07", "'"))


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


def plain_apostrophes(text: str) -> str:
    """`text` with typographic apostrophes (’, ʼ, ＇) as ASCII ', one character for one, so offsets
    into `text` stay valid."""
    return text.translate(_APOSTROPHES)
