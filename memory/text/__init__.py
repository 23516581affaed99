"""Text handling: normalisation, jieba tokens, CJK-safe cuts, token estimates."""

from memory.text.analysed import ANALYSED_CHARS, analysed
from memory.text.clean import clean_text
from memory.text.invisible import drop_invisible, holds_invisible
from memory.text.loggable import loggable
from memory.text.normalize import half_width, normalize, plain_apostrophes
from memory.text.shown import SHOWN_NAME_CHARS, shown_name
from memory.text.tokens import (
    INDEX_VERSION,
    dictionary_frequency,
    dictionary_tag,
    estimate_tokens,
    index_text,
    prepare,
    search_terms,
    word_terms,
    words,
)
from memory.text.truncate import grapheme_start, truncate, truncate_to_fit
from memory.text.unicode import lone_surrogate_at

__all__ = [
    "ANALYSED_CHARS",
    "INDEX_VERSION",
    "SHOWN_NAME_CHARS",
    "analysed",
    "clean_text",
    "dictionary_frequency",
    "dictionary_tag",
    "drop_invisible",
    "estimate_tokens",
    "grapheme_start",
    "half_width",
    "holds_invisible",
    "index_text",
    "loggable",
    "lone_surrogate_at",
    "normalize",
    "plain_apostrophes",
    "prepare",
    "search_terms",
    "shown_name",
    "truncate",
    "truncate_to_fit",
    "word_terms",
    "words",
]
