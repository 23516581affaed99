"""One NoteStore per scope: a folder per chat plus one global folder, under a base directory."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from memory.notes.store import LOCK_FILE, NoteStore

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
    (`base_dir/global/`). Stores are cached, so each scope has one in-process write lock."""

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = Path(base_dir)
        self._stores: dict[Path, NoteStore] = {}

    def for_chat(self, chat_key: str | int) -> NoteStore:
        """The notes of one chat."""
        return self._store(self.base_dir / CHATS_FOLDER / chat_folder_name(chat_key))

    def move_chat(self, old_key: str, new_key: str) -> bool:
        """Move a chat's notes folder to the chat's new key (a renamed chat) when the new key has no
        folder yet; True when moved. Use before either store is handed out."""
        old = self.base_dir / CHATS_FOLDER / chat_folder_name(old_key)
        new = self.base_dir / CHATS_FOLDER / chat_folder_name(new_key)
        if not old.is_dir() or new.exists():
            return False
        old.rename(new)
        return True

    async def merge_chat(self, old_key: str, new_key: str, *, dry_run: bool = False) -> list[tuple[str, str]]:
        """Move a chat's notes into another chat's folder (a chat merged into another); returns
        (old name, new name) pairs. With no folder there yet the folder moves whole (`move_chat`);
        otherwise note by note, a name taken there keeping both notes (`NoteStore.adopt`). The emptied
        folder is removed. `dry_run` only says what would move."""
        old = self.base_dir / CHATS_FOLDER / chat_folder_name(old_key)
        if not old.is_dir():
            return []
        source, target = self.for_chat(old_key), self.for_chat(new_key)
        if not dry_run and not target.root.exists():
            names = await source.list()
            if self.move_chat(old_key, new_key):
                return [(name, name) for name in names]
        moved = await target.adopt(source, f"from {old_key}", dry_run=dry_run)
        if not dry_run:
            leftovers = [p for p in old.iterdir() if p.name != LOCK_FILE]
            if not leftovers:
                (old / LOCK_FILE).unlink(missing_ok=True)
                old.rmdir()
        return moved

    def global_scope(self) -> NoteStore:
        """The notes shared by all chats."""
        return self._store(self.base_dir / GLOBAL_FOLDER)

    def _store(self, root: Path) -> NoteStore:
        store = self._stores.get(root)
        if store is None:
            store = self._stores[root] = NoteStore(root)
        return store
