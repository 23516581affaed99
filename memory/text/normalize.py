"""One normal form for matching: NFKC (full-width → half-width), case-folded, trimmed."""

import unicodedata

# Typographic apostrophes that phones and word processors type for ' ("I’m", "don’t"); NFKC keeps them.
_APOSTROPHES = str.maketrans(dict.fromkeys("\u2019\u02bc\uff07", "'"))
# What a Chinese keyboard types in full-width mode: ＡＢＣ，１２３／ and the ideographic space.
_HALF_WIDTH = str.maketrans({0x3000: 0x20} | {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)})


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


def plain_apostrophes(text: str) -> str:
    """`text` with typographic apostrophes (’, ʼ, ＇) as ASCII ', one character for one, so offsets
    into `text` stay valid."""
    return text.translate(_APOSTROPHES)


def half_width(text: str) -> str:
    """`text` with full-width ASCII forms (ＡＢＣ, ３, ／, ，) and the ideographic space as their ASCII
    characters, one character for one, so offsets into `text` stay valid (NFKC would fold them too,
    but may change the length elsewhere: ㍿ becomes four characters)."""
    return text.translate(_HALF_WIDTH)
