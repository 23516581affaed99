"""One NoteStore per scope: a folder per chat plus one global folder, under a base directory."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from memory.notes.store import MOVED_FILE, NoteStore, moved_to

NOTES_FOLDER = "notes"  # the notes' base directory inside a data directory
GLOBAL_FOLDER = "global"
CHATS_FOLDER = "chats"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_SLUG_CHARS = 32


def chat_folder_name(chat_key: str | int) -> str:
    """A safe, stable folder name for a chat key: a readable ASCII slug plus a hash of the key.

    The hash keeps distinct keys apart even when their slugs agree (e.g. `qq:1` and `qq/1`).
    """
    key = str(chat_key)
    slug = _UNSAFE.sub("_", key).strip("_")[:_SLUG_CHARS] or "chat"
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
    return f"{slug}-{digest}"


class NoteScopes:
    """Hands out the NoteStore of a chat (`base_dir/chats/<slug>-<hash>/`) or of the global scope
    (`base_dir/global/`). Stores are cached, so each scope has one in-process write lock. A chat
    merged into another (`merge_chat`, by this process or another) has the store of the chat its notes
    went into."""

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = Path(base_dir)
        self._stores: dict[Path, NoteStore] = {}

    def for_chat(self, chat_key: str | int) -> NoteStore:
        """The notes of one chat (of the chat it was merged into, if it was)."""
        return self._store(moved_to(self._chat_folder(chat_key)))

    def _chat_folder(self, chat_key: str | int) -> Path:
        return self.base_dir / CHATS_FOLDER / chat_folder_name(chat_key)

    def move_chat(self, old_key: str, new_key: str) -> bool:
        """Move a chat's notes folder to the chat's new key (a renamed chat) when the new key has no
        folder yet; True when moved. A folder a merge left (its `.moved` file naming where the notes
        went) stays: it holds no notes of the chat, and moved it would send the new key's notes to the
        chat the old one was merged into. Use before either store is handed out."""
        old, new = self._chat_folder(old_key), self._chat_folder(new_key)
        if not old.is_dir() or new.exists() or (old / MOVED_FILE).exists():
            return False
        old.rename(new)
        return True

    def unmoved(self, chat_key: str) -> bool:
        """Whether `chat_key` has a notes folder of its own whose notes were not moved away (no
        `.moved` file in it)."""
        folder = self._chat_folder(chat_key)
        return folder.is_dir() and moved_to(folder) == folder

    async def merge_chat(self, old_key: str, new_key: str, *, dry_run: bool = False) -> list[tuple[str, str]]:
        """Move a chat's notes into another chat's folder (a chat merged into another); returns
        (old name, new name) pairs. They move note by note under both folders' locks, a name taken
        there keeping both notes (`NoteStore.adopt`), and the old folder is left holding only a
        `.moved` file naming the new one (made for that, when the chat had no notes): a store of it
        handed out before (a reply's tools, `qunyi mcp`, here or in another process) follows the notes
        there, and nothing is written in it again. `dry_run` only says what would move."""
        old = self._chat_folder(old_key)
        if moved_to(old) != old or (dry_run and not old.is_dir()):
            return []
        if not dry_run:
            old.mkdir(parents=True, exist_ok=True)
        source, target = self._store(old), self.for_chat(new_key)
        moved = await target.adopt(source, f"from {old_key}", dry_run=dry_run)
        if not dry_run:
            self._stores.pop(old, None)
        return moved

    def global_scope(self) -> NoteStore:
        """The notes shared by all chats."""
        return self._store(self.base_dir / GLOBAL_FOLDER)

    def _store(self, root: Path) -> NoteStore:
        store = self._stores.get(root)
        if store is None:
            store = self._stores[root] = NoteStore(root)
        return store
