"""`PersonResolver`: names → person ids for one chat, for recall, the reply context and /who.

It builds an `AliasIndex` of a chat's members (their person_name there, their aliases of that chat
and their global ones) and caches it until the chat's or the global alias version changes, so a
lookup costs two small queries when nothing changed. A merge changes the names of the chat it went
into, which is then rebuilt; what is held for the chat merged away is dropped at the next lookup
after the merge, in whichever chat (memory.chat_marks.MergeWatch), or at once by `forget_chats`.
Person ids inside `Resolution` and `Mention` are the database ids as strings (the pure core is
storage-agnostic); `mentions` returns ints.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from memory.chat_marks import MergeWatch
from memory.persons import store
from memory.persons.aliases import AliasIndex, Mention, Resolution
from memory.persons.config import PersonsConfig
from memory.recent_chats import CHATS_HELD, drop_least_recent
from memory.storage import Database

MAX_REMEMBERED_TEXTS = 4096


@dataclass(slots=True)
class _Names:
    """What is held for one chat: its alias index at the names' version, and the mentions already
    found per text (the recent window is searched again for every reply), dropped with the index."""

    version: tuple[int, int]
    index: AliasIndex
    found: dict[str, list[int]] = field(default_factory=dict)


class PersonResolver:
    """Resolves names of people in a chat; one instance is shared by every reader."""

    def __init__(
        self,
        db: Database,
        config: Callable[[], PersonsConfig] | None = None,
        *,
        max_chats: int = CHATS_HELD,
    ) -> None:
        self.db = db
        self.config = config or PersonsConfig
        self.max_chats = max_chats
        self._cache: OrderedDict[int, _Names] = OrderedDict()  # least recently used first
        self._merges = MergeWatch()

    def cached_chats(self) -> set[int]:
        """The chats whose names are held in memory."""
        return set(self._cache)

    def forget_chats(self, chat_ids: Iterable[int]) -> None:
        """Drop the names held for these chats (a merge this process made); rebuilt at their next use."""
        for chat_id in chat_ids:
            self._cache.pop(chat_id, None)

    async def index(self, chat_id: int) -> AliasIndex:
        """The chat's alias index, rebuilt only when its names changed."""
        return (await self._names(chat_id)).index

    async def _names(self, chat_id: int) -> _Names:
        async with self.db.read() as session:
            self.forget_chats(await self._merges.gone(session, self.cached_chats()))
            version = await store.versions(session, chat_id)
            held = self._cache.get(chat_id)
            fresh = held is not None and held.version == version
            sources = self.config().alias_sources
            entries = [] if fresh else await store.alias_entries(session, chat_id, sources)
        if held is None or not fresh:
            held = _Names(version, AliasIndex(entries))
        self._cache[chat_id] = held
        self._cache.move_to_end(chat_id)
        drop_least_recent(self._cache, self.max_chats)
        return held

    async def resolve(self, chat_id: int, name: str) -> Resolution:
        """Everyone in the chat `name` may refer to, best first; `ambiguous` when two are too close.
        Match person ids are `str(person_id)`."""
        return (await self.index(chat_id)).resolve(name.strip().lstrip("@＠"))

    async def find(self, chat_id: int, text: str) -> list[Mention]:
        """Names of the chat's people inside `text` (ambiguous ones have person_id None)."""
        return (await self.index(chat_id)).find_mentions(
            text, min_confidence=self.config().mention_min_confidence
        )

    async def mentions(self, chat_id: int, text: str) -> list[int]:
        """The people clearly named in `text`, in order of first appearance, without repeats —
        what recall needs to turn names in a query into person ids. Ambiguous names are left out."""
        return (await self.mentions_in(chat_id, [text]))[0]

    async def mentions_in(self, chat_id: int, texts: Sequence[str]) -> list[list[int]]:
        """`mentions` of each text, reading the chat's names once."""
        names = await self._names(chat_id)
        index, known = names.index, names.found
        confidence = self.config().mention_min_confidence
        if len(known) > MAX_REMEMBERED_TEXTS:
            known.clear()
        for text in texts:
            if text not in known:
                found = index.find_mentions(text, min_confidence=confidence)
                known[text] = list(dict.fromkeys(int(m.person_id) for m in found if m.person_id is not None))
        return [list(known[text]) for text in texts]
