"""A name as an error message quotes it."""

from memory.text.clean import clean_text
from memory.text.truncate import truncate

SHOWN_NAME_CHARS = 40


def shown_name(name: str) -> str:
    """`name` as a one-line refusal quotes it: control characters dropped, whitespace runs (line breaks
    included) as one space, cut to SHOWN_NAME_CHARS on a grapheme boundary. A 10,000-character name
    would otherwise make a 10,000-character error."""
    return " ".join(truncate(clean_text(name), SHOWN_NAME_CHARS).split())
