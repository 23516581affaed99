"""How likely a string is in ordinary text: the "ordinary words" background of discovery.

The background is a unigram word model. Chinese words and their frequencies come from jieba's
dictionary (`jieba.dt.FREQ`), whose sources predate today's group-chat slang, so "一个" is common and
"绝绝子" is not. A string's log-probability is that of its most likely segmentation (the same dynamic
programme jieba uses to cut), so a long phrase of common words ("一个能打的都没有") is still unlikely
as a whole, while a repeated everyday phrase ("我也是") stays likely.

Latin words are scored with English word frequencies from `wordfreq` (a dependency; its Chinese
lists are not used, as they already contain recent slang such as "yyds"). If it cannot be imported
a crude per-letter model is used instead, and ordinary English words must then be kept out by the
stop-word filter.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from functools import lru_cache

import jieba

from memory.jargon.spans import is_latin

jieba.setLogLevel(logging.WARNING)

# Per-letter log-probability of the fallback model for Latin words (about 1/30 per character).
_LETTER_LOGP = math.log(1 / 30)
# With an English word list, a Latin word it does not know ("yyds", "u1s1") is rarer than its rarest
# entries (about 1e-8): it is scored as an out-of-vocabulary event times the letter model.
_OOV_LOGP = math.log(1e-9)


def _load_english() -> Callable[[str], float] | None:
    try:
        from wordfreq import word_frequency
    except ImportError:  # optional extra
        return None

    def frequency(word: str) -> float:
        return float(word_frequency(word, "en"))

    return frequency


class BackgroundModel:
    """Log-probability of strings under an ordinary-text word model (see module docstring).

    `max_word` bounds the dictionary word length tried during segmentation. Results are cached, so
    one instance should be shared (see `default_background`).
    """

    def __init__(self, max_word: int = 8, english: Callable[[str], float] | None = None) -> None:
        dictionary = jieba.dt
        dictionary.check_initialized()
        self._freq: dict[str, int] = dictionary.FREQ
        self._log_total = math.log(dictionary.total)
        self._unknown = -self._log_total  # an unseen character counts as frequency 1, as in jieba
        self._max_word = max_word
        self._english = english
        self.log_prob = lru_cache(maxsize=200_000)(self._log_prob)

    def _word_logp(self, word: str) -> float | None:
        freq = self._freq.get(word)
        if freq:
            return math.log(freq) - self._log_total
        return None

    def _latin_logp(self, word: str) -> float:
        letter_model = _LETTER_LOGP * len(word)
        if self._english is not None:
            freq = self._english(word)
            if freq > 0:
                return max(math.log(freq), letter_model)
            return _OOV_LOGP + letter_model
        known = self._word_logp(word)
        return max(known, letter_model) if known is not None else letter_model

    def _log_prob(self, text: str) -> float:
        """Natural log-probability of the most likely segmentation of `text` (normalised)."""
        n = len(text)
        best = [0.0] + [-math.inf] * n
        for i in range(n):
            if best[i] == -math.inf:
                continue
            char = text[i]
            if char.isspace():
                best[i + 1] = max(best[i + 1], best[i])
                continue
            if is_latin(char) and (i == 0 or not is_latin(text[i - 1])):
                j = i
                while j < n and is_latin(text[j]):
                    j += 1
                best[j] = max(best[j], best[i] + self._latin_logp(text[i:j]))
                continue
            if is_latin(char):
                continue
            best[i + 1] = max(best[i + 1], best[i] + (self._word_logp(char) or self._unknown))
            for j in range(i + 2, min(n, i + self._max_word) + 1):
                if is_latin(text[j - 1]):
                    break
                logp = self._word_logp(text[i:j])
                if logp is not None:
                    best[j] = max(best[j], best[i] + logp)
        return best[n]


@lru_cache(maxsize=1)
def default_background() -> BackgroundModel:
    """The shared background model (jieba's dictionary, plus wordfreq English when installed)."""
    return BackgroundModel(english=_load_english())
