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
from memory.jargon.dictionary import Scope
from memory.jargon.matcher import JargonMatcher
from memory.storage import Database


@dataclass(frozen=True, slots=True)
class Explained:
    """A term found in the text, with its meaning."""

    term: str
    meaning: str
    jargon_id: int


@dataclass(slots=True)
class _Compiled:
    fingerprint: tuple[int, int, int]
    matcher: JargonMatcher
    entries: dict[str, dictionary.EntryView]
    explained: tuple[Explained, ...] = ()


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """Every explainable term a chat sees, with a key that changes when any of them changes."""

    key: tuple[object, ...]
    entries: tuple[Explained, ...]


class JargonExplainer:
    """Finds dictionary terms in texts for one chat at a time; `scope` is read on every call so a
    config reload applies at once."""

    def __init__(self, db: Database, scope: Scope | None = None) -> None:
        self.db = db
        self.scope: Scope = scope or "global"
        self._cache: dict[tuple[str, int | None], _Compiled] = {}

    async def _compiled(self, chat_id: int) -> _Compiled:
        key = (self.scope, None if self.scope == "global" else chat_id)
        async with self.db.read() as session:
            fingerprint = await dictionary.version(session)
            cached = self._cache.get(key)
            if cached is not None and cached.fingerprint == fingerprint:
                return cached
            entries = await dictionary.explainable(session, chat_id, self.scope)
        # A chat's own entry wins over a global one with the same spelling.
        entries.sort(key=lambda e: e.chat_id is None)
        compiled = _Compiled(fingerprint, JargonMatcher(e.content for e in entries), {})
        for entry in entries:
            compiled.entries.setdefault(entry.content, entry)
        compiled.explained = tuple(Explained(e.content, e.meaning, e.id) for e in compiled.entries.values())
        self._cache[key] = compiled
        return compiled

    async def vocabulary(self, chat_id: int) -> Vocabulary:
        """All terms `chat_id` may have explained, one entry per spelling (the chat's own first)."""
        compiled = await self._compiled(chat_id)
        scope_key = (self.scope, None if self.scope == "global" else chat_id)
        return Vocabulary((*scope_key, *compiled.fingerprint), compiled.explained)

    async def explain(self, chat_id: int, texts: Iterable[str]) -> list[Explained]:
        """Terms present in `texts` (each once, in order of first appearance) with their meanings."""
        compiled = await self._compiled(chat_id)
        if not len(compiled.matcher):
            return []
        found: dict[str, Explained] = {}
        for text in texts:
            for term in compiled.matcher.terms_in(text):
                entry = compiled.entries[term]
                found.setdefault(term, Explained(entry.content, entry.meaning, entry.id))
        return list(found.values())
