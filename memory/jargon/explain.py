"""Explaining jargon before a reply: every known term in the recent messages, found in one pass.

The explainable entries visible to a chat (approved, or inferred as jargon, with a meaning) are
compiled into one Aho-Corasick matcher per scope and reused until the dictionary changes (a cheap
fingerprint query per call), so a 10,000-entry dictionary costs one automaton build, not a regex
per entry per reply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memory.jargon import dictionary
from memory.jargon.matcher import JargonMatcher
from memory.storage import Database


@dataclass(frozen=True, slots=True)
class Explained:
    """A term found in the text, with its meaning; `provenance` says whose meaning it is
    (dictionary.MEMBER: a member's words in chat)."""

    term: str
    meaning: str
    jargon_id: int
    provenance: str = "inferred"


# Whose terms a vocabulary holds: None for the global ones every chat shares, a chat id for a chat
# whose own entries change what it sees.
VocabularyScope = int | None


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """Every explainable term a chat sees (one entry per term, the chat's own winning), compiled
    for matching. `scope` is whose terms these are (every chat's, or one chat's); `version` is the
    dictionary fingerprint they were read at, which changes whenever any term does."""

    scope: VocabularyScope
    version: tuple[int, int, int]
    terms: dict[str, Explained]
    matcher: JargonMatcher

    @property
    def entries(self) -> tuple[Explained, ...]:
        return tuple(self.terms.values())

    def find(self, texts: Iterable[str]) -> list[Explained]:
        """Terms present in `texts` (each once, in order of first appearance) with their meanings."""
        if not len(self.matcher):
            return []
        found: dict[str, Explained] = {}
        for text in texts:
            for term in self.matcher.terms_in(text):
                found.setdefault(term, self.terms[term])
        return list(found.values())


class JargonExplainer:
    """Finds dictionary terms in texts for one chat at a time. (The jargon scope setting decides only
    where mining stores a term; what a chat sees is the same under either.)"""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._cache: dict[VocabularyScope, Vocabulary] = {}

    async def vocabulary(self, chat_id: int) -> Vocabulary:
        """The terms `chat_id` may have explained, rebuilt only when the dictionary changed. Chats
        with no own entries share one vocabulary of the global terms."""
        async with self.db.read() as session:
            version = await dictionary.version(session)
            own = await dictionary.has_own_vocabulary(session, chat_id)
            scope = chat_id if own else None
            cached = self._cache.get(scope)
            if cached is not None and cached.version == version:
                return cached
            views = await dictionary.explainable(session, chat_id)
        terms: dict[str, Explained] = {}
        for view in views:
            terms.setdefault(view.content, Explained(view.content, view.meaning, view.id, view.provenance))
        vocabulary = Vocabulary(scope, version, terms, JargonMatcher(terms))
        # The dictionary changed: every other vocabulary held is stale, and a chat merged into another
        # (its terms moved, so the dictionary changed) is never asked for again.
        self._cache = {s: v for s, v in self._cache.items() if v.version == version}
        self._cache[scope] = vocabulary
        return vocabulary

    def cached_chats(self) -> set[int]:
        """The chats whose own vocabulary is held in memory (the shared one of global terms aside)."""
        return {scope for scope in self._cache if scope is not None}

    def forget_chats(self, chat_ids: Iterable[int]) -> None:
        """Drop the own vocabularies held for these chats (a merge this process made). A merge made by
        another process changes the dictionary (the merged chat's terms move), so the next call drops
        them then."""
        for chat_id in chat_ids:
            self._cache.pop(chat_id, None)

    async def explain(self, chat_id: int, texts: Iterable[str]) -> list[Explained]:
        """Terms present in `texts` (each once, in order of first appearance) with their meanings."""
        return (await self.vocabulary(chat_id)).find(texts)
