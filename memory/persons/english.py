"""English words and names: whether a word is ordinary English vocabulary, and which given names are
nicknames of one another.

A part of a member's name found alone in a message ("ask Priya", "did O'Connor send it?") is taken for
a name when it is written with a capital and is either no word every English speaker writes, or is
capitalised where English writes such a word small (`written_as_a_name`): "ask Sam", "thanks Will",
but not "Will you…" at a sentence start, "in May", "the Park", nor a line in capitals or Title Case.
A member's own name may name them at a sentence start too, followed as a subject is ("Will is coming
tonight"; `names_a_member`).
wordfreq's English frequencies decide what is everyday vocabulary (a dependency, offline): a word at
or above `COMMON_ZIPF` on its Zipf scale (log10 of uses per billion words; 4.5 is about 30 per
million). wordfreq counts a word whatever its case, so the commonest given names ("John", "Sam") count
as everyday words and are found only where their capital says "name". A name given for oneself in
"I'm X" without a greeting must be rarer still (`KNOWN_ZIPF`): a wrong alias is kept.

Nicknames come from the `nicknames` package (a dependency, Apache-2.0): a hand-curated table of English
given names and their nicknames (Elizabeth: Liz, Beth, Betty; Robert: Bob, Rob; William: Bill, Will),
shipped inside the wheel as a CSV and read once, when first needed.
"""

from __future__ import annotations

import calendar
import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nicknames import NickNamer

COMMON_ZIPF = 4.5
# A name someone gives themselves ("btw I'm Pri") has nothing to back it but the phrase, and an alias is
# kept: any word English uses three times per million words ("Hungry", "Bored", "Vegan") is a word.
KNOWN_ZIPF = 3.5
# English capitalises these whatever they mean ("in May"), and a word after an article is no name.
_CALENDAR_NAMES = frozenset(name.lower() for name in (*calendar.month_name, *calendar.day_name) if name)
_ARTICLES = frozenset(("a", "an", "the"))
_SENTENCE_ENDS = frozenset(".!?。！？…:：\n")
_OPENERS = frozenset("\"'“‘(（[「『*_~")
# What follows a sentence's first word when it is the subject: auxiliaries and the verbs a chat tells
# of someone with (in small letters: "Will Is Here" is Title Case).
_SUBJECT_VERBS = frozenset(
    """is was isn't wasn't has had hasn't hadn't will would won't wouldn't can could can't couldn't
    should shouldn't might must does did doesn't didn't said says told asked asks thinks thought
    wants wanted went left came comes sent just also already""".split()
)
# A verb told of someone: "Bob lives in Rome", "Mark texted" (a plural noun, "Grace periods", too).
_INFLECTED = re.compile(r"[^s]s$|ed$")
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


def written_as_a_name(text: str, at: int, word: str) -> bool:
    """Whether the Latin word `word` (folded), written at `at` in `text`, is written as a name: with a
    capital, and either no everyday English word or capitalised where English writes it small, inside
    a sentence ("ask Sam", "thanks Will"), neither a month or weekday ("in May") nor after an article
    ("the Park"), and not in capitals ("ASK SAM") or Title Case ("Ask Will About It"), where every
    word has one."""
    written = text[at : at + len(word)]
    if not written[:1].isupper():
        return False
    if not is_common_english(word):
        return True
    if written.isupper() or word in _CALENDAR_NAMES:
        return False
    before = _word_before(text, at)
    if before is None:  # a sentence's first word is capitalised whatever it is
        return False
    return before.casefold() not in _ARTICLES and not (before[:1].isupper() and is_common_english(before))


def names_a_member(text: str, at: int, word: str) -> bool:
    """Whether the Latin word `word` (folded), written at `at` in `text` and a member's own name (an
    alias of theirs or a word of their full name, not a nickname the table gives it), names them.
    Written as a name (`written_as_a_name`), it does. At a sentence's start, where a capital proves
    nothing, an everyday word does only when what follows makes it the subject of a verb ("Will is
    coming tonight", "Mark said…", "Bob lives in Rome", "Will's here") or calls them ("Mark, you
    there?"); followed by what a verb takes ("Will you…", "Mark it as done", "Bill me later", "Grace
    period ends") it is that word, as in Title Case ("Will Is Here") or capitals. A month or weekday
    never is."""
    if written_as_a_name(text, at, word):
        return True
    written = text[at : at + len(word)]
    if not written[:1].isupper() or written.isupper() or word in _CALENDAR_NAMES:
        return False
    if _word_before(text, at) is not None:
        return False
    rest = text[at + len(word) :].translate(_ASCII_JOINERS)
    if rest.startswith((",", "，")) or (rest.startswith("'s") and not rest[2:3].isalnum()):
        return True  # called ("Mark, you there?") or theirs ("Will's here")
    after = rest.split(maxsplit=1)
    verb = after[0].rstrip(",.!?;:…") if after else ""
    return verb in _SUBJECT_VERBS or (
        verb.isalpha() and verb.islower() and _INFLECTED.search(verb) is not None
    )


def _word_before(text: str, at: int) -> str | None:
    """The word before position `at` in its sentence, "" when a sign other than a word is, None at the
    start of a sentence."""
    i = at
    while i > 0 and (text[i - 1].isspace() or text[i - 1] in _OPENERS):
        i -= 1
    if i == 0 or text[i - 1] in _SENTENCE_ENDS:
        return None
    end = i
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "'’-"):
        i -= 1
    return text[i:end]
