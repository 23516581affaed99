"""The language Qunyi writes its own words in for a chat: English where the chat writes mostly in Latin
script, else Chinese, Qunyi's first language.

Its own words are few and fixed: the titles and summaries of topics packed offline, the answers to
/recall, /who and /what, and person cards. Everything a member or a model wrote is shown as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

Language = Literal["zh", "en"]
CHINESE: Language = "zh"
ENGLISH: Language = "en"

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
# A letter alone is left out: "B站", "A股", "K歌" are Chinese words.
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
# Links, @mentions, code blocks and commands (/recall) are Latin script in every chat: a Chinese chat
# pasting them is still Chinese.
_NOT_LANGUAGE = re.compile(r"```.*?(?:```|$)|(?:https?://|www\.)\S+|@\S+|(?<!\S)[/／]\S+", re.DOTALL)
# Fewer Latin words than this tell nothing: "/who me" in a new chat stays Chinese, the first language.
MIN_ENGLISH_WORDS = 3
# How much of one text is read: the start says what language it is in (a message may be a million
# characters long).
READ_CHARS = 2000


def language_of(texts: Iterable[str], min_words: int = MIN_ENGLISH_WORDS) -> Language:
    """English when `texts` hold more than twice as many Latin words as CJK characters, and at least
    `min_words` (links, @mentions, code and commands left out); else Chinese, also when they hold
    neither. Twice: Chinese comes first, and a Chinese chat writes English names and slang among its
    characters ("B群 yyds 啊")."""
    cjk = latin = 0
    for text in texts:
        prose = _NOT_LANGUAGE.sub(" ", text[:READ_CHARS])
        cjk += len(_CJK.findall(prose))
        latin += len(_LATIN_WORD.findall(prose))
    return ENGLISH if latin >= min_words and latin > 2 * cjk else CHINESE
