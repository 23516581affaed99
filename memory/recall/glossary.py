"""Group slang in recall. A question that uses a known term also searches for the words of its
meaning ("上次开炉是哪天" → 火锅, 聚餐), and a question in plain words also searches for the terms
whose meaning shares a word with it ("上次吃火锅是哪天" → 开炉).

The terms are the jargon dictionary entries the asking chat may have explained (approved, or
inferred as jargon, with a meaning), under the jargon scope: a chat's own slang never widens another
chat's search unless that scope is global.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from memory.jargon.explain import Explained, Vocabulary, VocabularyScope
from memory.recall.keywords import Keyword, query_keywords
from memory.storage.fts import phrase_expression

MAX_TERMS = 5
MAX_MEANING_WORDS = 8
COMMON_FLOOR = 2


class VocabularySource(Protocol):
    """Where the glossary reads a chat's terms (the jargon explainer)."""

    async def vocabulary(self, chat_id: int) -> Vocabulary: ...


@dataclass(frozen=True, slots=True)
class _Index:
    entries: tuple[Explained, ...]
    position: dict[int, int]
    meaning_words: tuple[tuple[Keyword, ...], ...]
    by_word: dict[str, tuple[int, ...]]


def _meaning_words(meaning: str) -> tuple[Keyword, ...]:
    found = [k for k in query_keywords(meaning) if not (len(k.term) == 1 and not k.latin)]
    return tuple(found[:MAX_MEANING_WORDS])


def _build(vocabulary: Vocabulary) -> _Index:
    entries = vocabulary.entries
    words = tuple(_meaning_words(e.meaning) for e in entries)
    by_word: defaultdict[str, list[int]] = defaultdict(list)
    for i, keywords in enumerate(words):
        for keyword in keywords:
            by_word[keyword.match].append(i)
    return _Index(
        entries,
        {e.jargon_id: i for i, e in enumerate(entries)},
        words,
        {word: tuple(found) for word, found in by_word.items()},
    )


def _meant(index: _Index, asked: set[str], skip: set[int]) -> list[int]:
    """The entries whose meaning shares the most specific words with the question, best first: a
    shared word counts by how few meanings use it, and a word that over half of them use (of more than
    a handful) counts for nothing."""
    total = len(index.entries)
    scores: defaultdict[int, float] = defaultdict(float)
    for word in asked:
        found = index.by_word.get(word, ())
        if not found or len(found) > max(COMMON_FLOOR, total / 2):
            continue
        weight = math.log((total + 1) / (len(found) + 0.5))
        for i in found:
            if i not in skip:
                scores[i] += weight
    return sorted(scores, key=lambda i: (-scores[i], i))[:MAX_TERMS]


class JargonGlossary:
    """Turns a question into extra full-text words through the chat's slang dictionary."""

    def __init__(self, source: VocabularySource) -> None:
        self.source = source
        self._indexes: dict[VocabularyScope, tuple[tuple[int, int, int], _Index]] = {}

    def _index(self, vocabulary: Vocabulary) -> _Index:
        cached = self._indexes.get(vocabulary.scope)
        if cached is not None and cached[0] == vocabulary.version:
            return cached[1]
        index = _build(vocabulary)
        # As in the explainer: the other indexes held are stale, some of chats merged away.
        self._indexes = {s: i for s, i in self._indexes.items() if i[0] == vocabulary.version}
        self._indexes[vocabulary.scope] = (vocabulary.version, index)
        return index

    def cached_chats(self) -> set[int]:
        """The chats whose own index is held in memory (the shared one of global terms aside)."""
        return {scope for scope in self._indexes if scope is not None}

    def forget_chats(self, chat_ids: Iterable[int]) -> None:
        """Drop the indexes held for these chats (a merge this process made; one made by another
        process changes the dictionary's version, and they are dropped at the next expansion)."""
        for chat_id in chat_ids:
            self._indexes.pop(chat_id, None)

    async def expansion(
        self, chat_ids: Sequence[int], question: str, keywords: Sequence[Keyword]
    ) -> str | None:
        """An FTS5 MATCH expression of the meaning words of the terms the question uses, and of the
        terms whose meaning uses one of the question's keywords; None when there is neither."""
        asked = {k.match for k in keywords}
        parts: dict[str, None] = {}
        expanded: set[VocabularyScope] = set()
        for chat_id in dict.fromkeys(chat_ids):
            vocabulary = await self.source.vocabulary(chat_id)
            if vocabulary.scope in expanded:  # under a global scope every chat sees the same terms
                continue
            expanded.add(vocabulary.scope)
            index = self._index(vocabulary)
            used = [index.position[e.jargon_id] for e in vocabulary.find([question])]
            for i in used[:MAX_TERMS]:
                for keyword in index.meaning_words[i]:
                    if keyword.match not in asked:
                        parts.setdefault(keyword.fts(), None)
            for i in _meant(index, asked, set(used)):
                phrase = phrase_expression(index.entries[i].term)
                if phrase is not None:
                    parts.setdefault(phrase, None)
        return " OR ".join(parts) if parts else None
