"""People named in a question, resolved to person ids (matched against speakers and mentions later,
not used as plain keywords). `PersonResolver` is the seam; `MemberResolver` resolves against the
members of the searched chats (group card, nickname, person_name) through the persons alias index,
so pinyin and diminutive variants (小红 ≈ 红红) also resolve."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from memory.directory import members
from memory.persons import AliasEntry, AliasIndex
from memory.persons.config import ALIAS_SOURCES
from memory.persons.store import alias_entries


@dataclass(frozen=True, slots=True)
class PersonRef:
    """A person known in the searched chats: ids, the name to show, and every name they go by."""

    person_id: int
    platform_user_id: str
    display: str
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NamedPerson:
    """A name found in the question: the people it may mean and where it stands in the text."""

    person_ids: frozenset[int]
    span: tuple[int, int]
    surface: str


class PersonResolver(Protocol):
    """Finds the people a question names; the people helper's alias store can replace the default."""

    async def people(self, session: AsyncSession, chat_ids: Sequence[int]) -> list[PersonRef]:
        """Everyone known in the chats."""
        ...

    def named_in(self, people: Sequence[PersonRef], text: str) -> list[NamedPerson]:
        """The people (of `people`) named in `text`, left to right."""
        ...


class MemberResolver:
    """Resolves names against chat members: card, nickname, person_name and every alias the people
    memory learnt in that chat ("叫我老赵"), by exact, pinyin and variant matches."""

    def __init__(self, cache_size: int = 64) -> None:
        self._indexes: OrderedDict[tuple[tuple[int, tuple[str, ...]], ...], AliasIndex] = OrderedDict()
        self.cache_size = cache_size

    async def people(self, session: AsyncSession, chat_ids: Sequence[int]) -> list[PersonRef]:
        found: dict[int, PersonRef] = {}
        for chat_id in chat_ids:
            aliases: dict[int, list[str]] = {}
            for entry in await alias_entries(session, chat_id, ALIAS_SOURCES):
                aliases.setdefault(int(entry.person_id), []).append(entry.alias)
            for m in await members(session, chat_id):
                held = found.get(m.person_id)
                known = (
                    m.name,
                    m.card,
                    m.nickname,
                    *aliases.get(m.person_id, ()),
                    *(held.names if held else ()),
                )
                names = tuple(dict.fromkeys(n for n in known if n))
                found[m.person_id] = PersonRef(
                    m.person_id, m.platform_user_id, held.display if held else m.name, names
                )
        return list(found.values())

    def _index(self, people: Sequence[PersonRef]) -> AliasIndex:
        """The alias index of these people, built once per distinct set of names (pinyin is costly)."""
        key = tuple(sorted((p.person_id, p.names) for p in people))
        index = self._indexes.get(key)
        if index is None:
            index = AliasIndex(
                AliasEntry(str(p.person_id), name, "member") for p in people for name in p.names
            )
            self._indexes[key] = index
            if len(self._indexes) > self.cache_size:
                self._indexes.popitem(last=False)
        else:
            self._indexes.move_to_end(key)
        return index

    def named_in(self, people: Sequence[PersonRef], text: str) -> list[NamedPerson]:
        if not people or not text.strip():
            return []
        named = []
        for mention in self._index(people).find_mentions(text):
            ids = (mention.person_id,) if mention.person_id is not None else mention.candidates
            if ids:
                named.append(NamedPerson(frozenset(int(i) for i in ids), mention.span, mention.text))
        return named
