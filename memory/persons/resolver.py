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

from memory.chat_marks import MergeWatch
from memory.persons import store
from memory.persons.aliases import AliasIndex, Mention, Resolution
from memory.persons.config import PersonsConfig
from memory.storage import Database

MAX_REMEMBERED_TEXTS = 4096
MAX_CACHED_CHATS = 256
"""The chats whose names are held at most, the least recently used dropped first (rebuilt at their next
use): a bot in a thousand chats would otherwise hold an index, and up to MAX_REMEMBERED_TEXTS texts, for
every chat it ever answered in, for as long as it runs."""


class PersonResolver:
    """Resolves names of people in a chat; one instance is shared by every reader."""

    def __init__(
        self,
        db: Database,
        config: Callable[[], PersonsConfig] | None = None,
        *,
        max_chats: int = MAX_CACHED_CHATS,
    ) -> None:
        self.db = db
        self.config = config or PersonsConfig
        self.max_chats = max_chats
        self._cache: OrderedDict[int, tuple[tuple[int, int], AliasIndex]] = OrderedDict()
        # Mentions already found per chat and text; the recent window is searched again for every
        # reply. Dropped with the chat's index when its names change.
        self._found: dict[int, dict[str, list[int]]] = {}
        self._merges = MergeWatch()

    def cached_chats(self) -> set[int]:
        """The chats whose names are held in memory."""
        return set(self._cache) | set(self._found)

    def forget_chats(self, chat_ids: Iterable[int]) -> None:
        """Drop the names held for these chats (a merge this process made); rebuilt at their next use."""
        for chat_id in chat_ids:
            self._cache.pop(chat_id, None)
            self._found.pop(chat_id, None)

    async def index(self, chat_id: int) -> AliasIndex:
        """The chat's alias index, rebuilt only when its names changed."""
        async with self.db.read() as session:
            self.forget_chats(await self._merges.gone(session, self.cached_chats()))
            version = await store.versions(session, chat_id)
            cached = self._cache.get(chat_id)
            if cached is not None and cached[0] == version:
                self._cache.move_to_end(chat_id)
                return cached[1]
            entries = await store.alias_entries(session, chat_id, self.config().alias_sources)
        built = AliasIndex(entries)
        self._cache[chat_id] = (version, built)
        self._cache.move_to_end(chat_id)
        self._found[chat_id] = {}
        while len(self._cache) > self.max_chats:
            self.forget_chats([next(iter(self._cache))])
        return built

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
        index = await self.index(chat_id)
        confidence = self.config().mention_min_confidence
        known = self._found.setdefault(chat_id, {})
        if len(known) > MAX_REMEMBERED_TEXTS:
            known.clear()
        for text in texts:
            if text not in known:
                found = index.find_mentions(text, min_confidence=confidence)
                known[text] = list(dict.fromkeys(int(m.person_id) for m in found if m.person_id is not None))
        return [list(known[text]) for text in texts]
