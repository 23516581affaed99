"""Substring statistics over a chat's recent messages, kept incrementally.

`HistoryStats` holds the normalised text of the last `capacity` messages of one chat. It answers:
- `count(s)`: an upper bound of how many messages contain `s` (exact occurrence counts for short
  n-grams from a counter, C-speed `str.count` over the joined history for longer strings, kept until
  the history changes); cheap, and monotone enough for Apriori-style pruning (a string is never
  counted more often than its parts);
- `occurrences(s)`: the exact messages and speakers that contain `s` on Latin word boundaries, and
  the characters seen left and right of it (for boundary entropy and closure);
- `asked()`: the strings its messages ask the meaning of ("X是什么意思").
It can always be rebuilt from the messages themselves; `add` evicts the oldest beyond `capacity`.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass

from memory.jargon.explanations import asked_about
from memory.jargon.filters import is_usable, mask_mentions
from memory.jargon.spans import is_word, latin_edges_ok
from memory.jargon.types import MinerMessage
from memory.text.mapped import fold

_SEP = "\x00"
# Longer strings counted since the history last changed, at most this many (then counted afresh).
COUNTED_LIMIT = 500_000


@dataclass(frozen=True, slots=True)
class _Entry:
    key: str
    text: str
    speaker: str
    asked: tuple[str, ...]  # the strings it asks the meaning of ("X是什么意思")


@dataclass(frozen=True, slots=True)
class Occurrences:
    """Where a string occurs in the history (`total` counts every occurrence, `keys` distinct ones)."""

    total: int
    keys: tuple[str, ...]
    speakers: frozenset[str]
    left: Counter[str]
    right: Counter[str]

    @property
    def df(self) -> int:
        """The number of distinct messages containing the string."""
        return len(self.keys)

    def entropy(self, side: str) -> float:
        """Boundary entropy (nats) of the `side` ("left"/"right") neighbours.

        A message edge or a non-word neighbour (punctuation, space, emoji) counts as a fresh symbol
        each time: it is a real boundary, so it must raise, not lower, the entropy.
        """
        counts = self.left if side == "left" else self.right
        boundaries = self.total - sum(counts.values())
        parts = [*counts.values(), *([1] * boundaries)]
        total = sum(parts)
        return -sum(c / total * math.log(c / total) for c in parts) if total else 0.0

    def top_share(self, side: str) -> float:
        """The share of occurrences followed (or preceded) by the most common word character."""
        counts = self.left if side == "left" else self.right
        return max(counts.values()) / self.total if counts and self.total else 0.0


class HistoryStats:
    """Incremental n-gram and substring statistics over the last `capacity` messages of one chat."""

    def __init__(self, capacity: int | None = None, index_n: int = 3) -> None:
        self.capacity = capacity
        self.index_n = index_n
        self._entries: deque[_Entry] = deque()
        self._keys: set[str] = set()
        self._grams: Counter[str] = Counter()
        self._asked: Counter[str] = Counter()
        self._chars = 0
        self._joined: str | None = None
        self._starts: list[int] = []
        self._snapshot: list[_Entry] = []
        self._counted: dict[str, int] = {}
        self.scanned = 0  # characters of history read by `count` and `occurrences` so far

    @classmethod
    def build(cls, messages: Iterable[MinerMessage], capacity: int | None = None) -> HistoryStats:
        """Statistics over `messages` (oldest first)."""
        stats = cls(capacity)
        stats.extend(messages)
        return stats

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    @property
    def n_chars(self) -> int:
        """Total normalised characters held (the size of the sample for expected counts)."""
        return self._chars

    def extend(self, messages: Iterable[MinerMessage]) -> None:
        """Add messages in order (see `add`)."""
        for message in messages:
            self.add(message)

    def add(self, message: MinerMessage) -> None:
        """Add one message (ignored when its key is already held or it is not usable: the bot's own, a
        memory command)."""
        if not is_usable(message) or message.key in self._keys:
            return
        text = fold(mask_mentions(message.text)).replace(_SEP, " ")
        entry = _Entry(message.key, text, message.speaker, tuple(asked_about(text)))
        self._entries.append(entry)
        self._keys.add(entry.key)
        self._count_grams(text, +1)
        self._asked.update(entry.asked)
        self._joined = None
        self._counted = {}
        if self.capacity is not None:
            while len(self._entries) > self.capacity:
                old = self._entries.popleft()
                self._keys.discard(old.key)
                self._count_grams(old.text, -1)
                self._asked.subtract(old.asked)
                for gone in [s for s in old.asked if self._asked[s] <= 0]:
                    del self._asked[gone]

    def _count_grams(self, text: str, sign: int) -> None:
        self._chars += sign * len(text)
        grams = self._grams
        n = len(text)
        for size in range(1, self.index_n + 1):
            for i in range(n - size + 1):
                grams[text[i : i + size]] += sign
        if sign < 0:
            for size in range(1, self.index_n + 1):
                for i in range(n - size + 1):
                    gram = text[i : i + size]
                    if grams[gram] <= 0:
                        del grams[gram]

    def _join(self) -> str:
        if self._joined is None:
            self._snapshot = list(self._entries)
            texts = [e.text for e in self._snapshot]
            starts: list[int] = []
            pos = 0
            for text in texts:
                starts.append(pos)
                pos += len(text) + 1
            self._starts = starts
            self._joined = _SEP.join(texts)
        return self._joined

    def asked(self) -> set[str]:
        """The strings messages of the history ask the meaning of ("炼丹是什么意思", "what does X
        mean", memory.jargon.explanations.asked_about), normalised."""
        return set(self._asked)

    def count(self, s: str) -> int:
        """Occurrences of normalised `s` in the history (an upper bound of its message count)."""
        if len(s) <= self.index_n:
            return self._grams.get(s, 0)
        # Discovery asks for the same strings again and again (every repeat of a phrase in a long
        # message); each answer is a scan of the whole history.
        found = self._counted.get(s)
        if found is None:
            if len(self._counted) >= COUNTED_LIMIT:
                self._counted.clear()
            joined = self._join()
            self.scanned += len(joined)
            found = self._counted[s] = joined.count(s)
        return found

    def occurrences(self, s: str, limit: int = 5000) -> Occurrences:
        """Exact occurrences of normalised `s` on Latin word boundaries (the first `limit` of them)."""
        joined = self._join()
        self.scanned += len(joined)
        left: Counter[str] = Counter()
        right: Counter[str] = Counter()
        keys: dict[str, None] = {}
        speakers: set[str] = set()
        total = 0
        pos = joined.find(s)
        while pos >= 0 and total < limit:
            end = pos + len(s)
            if latin_edges_ok(joined, pos, end):
                total += 1
                entry = self._snapshot[bisect_right(self._starts, pos) - 1]
                keys[entry.key] = None
                speakers.add(entry.speaker)
                if pos > 0 and is_word(joined[pos - 1]):
                    left[joined[pos - 1]] += 1
                if end < len(joined) and is_word(joined[end]):
                    right[joined[end]] += 1
            pos = joined.find(s, pos + 1)
        return Occurrences(total, tuple(keys), frozenset(speakers), left, right)
