"""English words and names: whether a word is ordinary English vocabulary, and which given names are
nicknames of one another.

A part of a member's name found alone in a message ("ask Priya", "did O'Connor send it?") and a name
given in "I'm X" are taken for a name only when they are not words every English speaker writes:
"Will", "May", "Mark", "Bill", "Rose", "Grace", "Park", "Happy" are, and a capital letter at the start
of a sentence says nothing. wordfreq's English frequencies decide (a dependency, offline): a word at or
above `COMMON_ZIPF` on its Zipf scale (log10 of uses per billion words; 4.5 is about 30 per million) is
ordinary vocabulary. wordfreq counts a word whatever its case, so the commonest given names ("John",
"Sam") count as ordinary too: a wrong person is worse than none. A name given for oneself without a
greeting must be rarer still (`KNOWN_ZIPF`).

Nicknames come from the `nicknames` package (a dependency, Apache-2.0): a hand-curated table of English
given names and their nicknames (Elizabeth: Liz, Beth, Betty; Robert: Bob, Rob; William: Bill, Will),
shipped inside the wheel as a CSV and read once, when first needed.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nicknames import NickNamer

COMMON_ZIPF = 4.5
# A name someone gives themselves ("btw I'm Pri") has nothing to back it but the phrase, and an alias is
# kept: any word English uses three times per million words ("Hungry", "Bored", "Vegan") is a word.
KNOWN_ZIPF = 3.5
# wordfreq reads ASCII apostrophes and hyphens inside a word ("o'connor", "mary-jane").
_ASCII_JOINERS = str.maketrans({"’": "'", "ʼ": "'", "‐": "-"})


@lru_cache(maxsize=4096)
def english_zipf(word: str) -> float:
    """How often English uses `word` (any case), on wordfreq's Zipf scale; 0 for a word it never saw."""
    from wordfreq import zipf_frequency  # its English list takes ~0.5 s to load: only when first needed

    return float(zipf_frequency(word.translate(_ASCII_JOINERS), "en"))


def is_common_english(word: str, at_least: float = COMMON_ZIPF) -> bool:
    """True when `word` (any case) is English vocabulary used at least `at_least` on the Zipf scale:
    by default everyday English (see the module docstring)."""
    return english_zipf(word) >= at_least


@lru_cache(maxsize=1)
def _nicknamer() -> NickNamer:
    from nicknames import NickNamer  # reads its CSV of about 2,700 rows

    return NickNamer()


@lru_cache(maxsize=4096)
def nickname_relatives(given: str) -> frozenset[str]:
    """The given names `given` (lower case) is a nickname of or has as a nickname, one step either way
    ("liz" → elizabeth, lisa, lizzie; "robert" → bob, rob, bobby…); none for a name the table lacks."""
    namer = _nicknamer()
    return frozenset((namer.nicknames_of(given) | namer.canonicals_of(given)) - {given})
