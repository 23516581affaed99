"""One folder of markdown notes (`<name>.md`) with a link index rebuilt from the files.

Concurrency: every change runs under an in-process asyncio lock and an OS-level `flock` on
`<root>/.lock`, and re-reads changed files before it reads-modifies-writes, so two writers (threads,
tasks or processes) never lose each other's update. Files are replaced atomically (temp file in the
same folder, fsync, `os.replace`), so a reader never sees a half-written note. The lock is one per
folder rather than one per note because a rename rewrites links in every note of the folder, and
note writes are small and rare.

The index (content and link targets per note) is refreshed from the folder on every operation,
re-reading only files whose (mtime, size, inode) changed, so notes edited by hand are picked up.
A file that is not UTF-8 (e.g. saved as GBK by an editor) is shown with replacement characters, but
no operation rewrites it from that text (rename, append, extract refuse with a NoteError), so its
bytes are never lost; `set` may still replace it whole. A file whose name is in another Unicode form
of a valid name (NFD, as macOS writes them) is read under the NFC name and renamed to it at the next
change, so it is neither skipped nor doubled by a write.

A folder whose notes were all moved into a sibling folder (`adopt`: a chat merged into another) keeps
only a `.moved` file naming that folder. A store of the old folder, handed out before the move (a
reply's tools, an MCP server, in this process or another), follows it at its next operation: it reads
and writes the notes where they went, and writes nothing in the old folder again.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import itertools
import logging
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from memory.atomic_write import TEMP_PREFIX, TEMP_SUFFIX, write_atomically
from memory.notes.embeds import collapse, expand
from memory.notes.errors import NoteChanged, NoteError, NoteNotFound, PassageNotFound
from memory.notes.links import link_targets, rewrite_target
from memory.notes.names import clean_name, is_valid_name
from memory.notes.weights import NoteScore, compute_weights, low_value, top_hints
from memory.text import clean_text, grapheme_start, lone_surrogate_at, truncate

log = logging.getLogger(__name__)

SUFFIX = ".md"
LOCK_FILE = ".lock"
MOVED_FILE = ".moved"
MAX_MOVES = 64  # a chain of folders merged on into others that is longer is taken as a loop
MAX_NOTE_CHARS = 100_000
# A note moved in under a taken name is `<name> (<label>)`: labels are cut to this many characters.
LABEL_CHARS = 40
FALLBACK_LABEL = "moved"
T = TypeVar("T")
# Aliases so annotations inside NoteStore do not resolve `list` to its own `list` method.
Names = list[str]
Scores = list[NoteScore]
Moves = list[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class _Entry:
    stamp: tuple[int, int, int]
    content: str
    targets: frozenset[str]
    # Why the file cannot be rewritten from `content` (not UTF-8: undecodable bytes were replaced).
    unreadable: str | None = None


@dataclass(frozen=True, slots=True)
class RenameResult:
    """What a rename did: the final name, whether it merged into an existing note, and which other
    notes had their links rewritten."""

    old: str
    new: str
    merged: bool
    rewritten: tuple[str, ...]


def version_of(content: str) -> str:
    """A short fingerprint of a note's content: what an editor sends back as `set(..., base=)`."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:32]


ABSENT = "absent"
"""The version of a note that does not exist (never a `version_of`): an edit's `base` when it started
from no note."""


@dataclass(frozen=True, slots=True)
class NoteRead:
    """A note as read: its text (None when there is none) and its version (`ABSENT` then)."""

    text: str | None
    version: str


@dataclass(frozen=True, slots=True)
class NoteWritten:
    """What `NoteStore.write` did: whether the note was created, and the version it now holds."""

    created: bool
    version: str


def join_contents(first: str, second: str) -> str:
    """`first` then `second`, separated by one blank line; an empty side adds nothing."""
    head, tail = first.rstrip("\n"), second.strip("\n")
    if not tail.strip():
        return first
    if not head.strip():
        return tail + "\n"
    return f"{head}\n\n{tail}\n"


class NoteStore:
    """The notes of one scope (a chat, or the global scope), stored in the folder `root`.

    All public methods are async and do their file work in a worker thread. Names are validated
    with `clean_name` (raising InvalidNoteName), so no name can reach outside `root`.
    """

    def __init__(self, root: Path) -> None:
        self.root = moved_to(Path(root))
        self._entries: dict[str, _Entry] = {}
        self._version = 0
        self._scores: tuple[int, Scores] | None = None
        self._index_lock = threading.Lock()
        self._write_lock = asyncio.Lock()

    # ---- reading -------------------------------------------------------------------------------

    async def list(self) -> Names:
        """All note names, sorted."""
        entries = await asyncio.to_thread(self._refresh)
        return sorted(entries)

    async def exists(self, name: str) -> bool:
        """True when a note called `name` exists."""
        name = clean_name(name)
        return name in await asyncio.to_thread(self._refresh)

    async def get(self, name: str, depth: int = 0) -> str | None:
        """The note's content with `![[embeds]]` expanded `depth` levels deep, or None if absent."""
        return (await self.read(name, depth)).text

    async def read(self, name: str, depth: int = 0) -> NoteRead:
        """What `get` gives, with the version (`version_of`) of the note as stored then, `ABSENT` when
        there was none: the `base` of an edit made from what was read."""
        name = clean_name(name)
        entries = await asyncio.to_thread(self._refresh)
        entry = entries.get(name)
        if entry is None:
            return NoteRead(None, ABSENT)

        def lookup(target: str) -> str | None:
            found = entries.get(target)
            return found.content if found else None

        return NoteRead(expand(name, entry.content, depth, lookup), version_of(entry.content))

    async def links(self, name: str) -> Names:
        """The distinct names the note links or embeds (existing or not), sorted."""
        name = clean_name(name)
        entry = (await asyncio.to_thread(self._refresh)).get(name)
        if entry is None:
            raise NoteNotFound(name)
        return sorted(entry.targets)

    async def backlinks(self, name: str) -> Names:
        """The notes that link to or embed `name`, sorted (the note need not exist)."""
        name = clean_name(name)
        entries = await asyncio.to_thread(self._refresh)
        return sorted(other for other, e in entries.items() if name in e.targets and other != name)

    async def scores(self) -> Scores:
        """Weight and length of every note (see memory.notes.weights for the rule)."""
        return await asyncio.to_thread(self._current_scores)

    async def hints(self, n: int = 10) -> Scores:
        """The `n` notes of highest weight, highest first."""
        return top_hints(await self.scores(), n)

    async def suggestions(self, threshold: float, max_notes: int) -> Scores:
        """Up to `max_notes` notes whose value (weight per character) is below `threshold`,
        lowest value first: candidates to split, trim or link better."""
        return low_value(await self.scores(), threshold, max_notes)

    # ---- writing -------------------------------------------------------------------------------

    async def set(self, name: str, content: str, *, base: str | None = None) -> bool:
        """Create or replace a note; returns True when it was created (see `write`)."""
        return (await self.write(name, content, base=base)).created

    async def write(self, name: str, content: str, *, base: str | None = None) -> NoteWritten:
        """Create or replace a note; returns whether it was created and the version written.

        Expanded embed blocks (`![[X]]start … ![[X]]end`) in `content` are collapsed back to
        `![[X]]`, so writing back what `get(depth>0)` returned does not copy other notes in.
        `base` is the `version_of` the content an edit started from (`ABSENT`: it started from no
        note): when the note no longer holds it (another writer changed, deleted or created it
        meanwhile), NoteChanged is raised and nothing is written, so an edit never silently replaces
        a change it did not see.
        """
        name = clean_name(name)
        text = _kept_text(collapse(content))

        def change(entries: dict[str, _Entry]) -> NoteWritten:
            entry = entries.get(name)
            if base is not None and (version_of(entry.content) if entry else ABSENT) != base:
                raise NoteChanged(name, entry.content if entry else None)
            self._write(name, text)
            # As a read gives it back (a leading BOM is dropped when the file is read).
            return NoteWritten(entry is None, version_of(_decode(text.encode("utf-8"))[0]))

        return await self._mutate(change)

    async def append(self, name: str, text: str) -> None:
        """Add `text` to the end of a note (after a blank line), creating the note if needed."""
        name = clean_name(name)
        addition = collapse(text)

        def change(entries: dict[str, _Entry]) -> None:
            current = _editable(entries, name) if name in entries else ""
            merged = _kept_text(join_contents(current, addition))
            self._write(name, merged)

        await self._mutate(change)

    async def delete(self, name: str) -> bool:
        """Delete a note; returns False when it did not exist. Links to it are left in place (a link
        may point to a note that does not exist)."""
        name = clean_name(name)

        def change(entries: dict[str, _Entry]) -> bool:
            if name not in entries:
                return False
            self._path(name).unlink(missing_ok=True)
            return True

        return await self._mutate(change)

    async def rename(self, old: str, new: str) -> RenameResult:
        """Rename `old` to `new` and rewrite every `[[old]]` / `![[old]]` in the scope to point at `new`.

        When `new` already exists the two are merged into `new`: its own content first, then the
        content of `old` after a blank line. The new note is written before the old one is removed,
        so an interrupted rename leaves a duplicate, never a loss. Raises NoteNotFound if `old` is
        missing.
        """
        old, new = clean_name(old), clean_name(new)

        def change(entries: dict[str, _Entry]) -> RenameResult:
            if old not in entries:
                raise NoteNotFound(old)
            if old == new:
                return RenameResult(old, new, merged=False, rewritten=())
            merged = new in entries
            others = [o for o, e in sorted(entries.items()) if o not in (old, new) and old in e.targets]
            text = _editable(entries, old)
            if merged:
                text = join_contents(_editable(entries, new), text)
            text = _kept_text(text)
            contents = {other: _editable(entries, other) for other in others}
            self._write(new, rewrite_target(text, old, new))
            for other in others:
                self._write(other, rewrite_target(contents[other], old, new))
            self._path(old).unlink(missing_ok=True)
            return RenameResult(old, new, merged, tuple(others))

        return await self._mutate(change)

    async def extract(self, source: str, passage: str, new: str) -> None:
        """Move the first occurrence of `passage` out of `source` into note `new`, leaving `[[new]]`
        in its place. If `new` exists the passage is appended to it after a blank line.

        Raises NoteNotFound, PassageNotFound, or NoteError when the passage is blank or `new` is
        the source itself.
        """
        source, new = clean_name(source), clean_name(new)
        if not passage.strip():
            raise NoteError("the passage to extract is empty")
        if source == new:
            raise NoteError("cannot extract a passage into the note it comes from")

        def change(entries: dict[str, _Entry]) -> None:
            if source not in entries:
                raise NoteNotFound(source)
            content = _editable(entries, source)
            if passage not in content:
                raise PassageNotFound(source)
            existing = _editable(entries, new) if new in entries else ""
            self._write(new, join_contents(existing, passage))
            self._write(source, content.replace(passage, f"[[{new}]]", 1))

        await self._mutate(change)

    async def adopt(self, source: NoteStore, label: str, *, dry_run: bool = False) -> Moves:
        """Move every note of `source` (another folder) here; returns (name there, name here) pairs.
        A note whose name is taken here keeps both: the one moved in is named `<name> (<label>)`
        (with a number when that is taken too), and links to it among the moved notes follow it. A
        file that is not UTF-8 moves byte for byte. A sibling folder is left holding a `.moved` file
        naming this one, so its stores follow the notes here. `dry_run` only says what would move."""
        async with self._write_lock, source._write_lock:
            return await asyncio.to_thread(self._adopt_sync, source, label, dry_run)

    def _adopt_sync(self, source: NoteStore, label: str, dry_run: bool) -> Moves:
        if not source.root.is_dir() or source.root == self.root:
            return []
        if dry_run:  # reads only: no lock, and no folder made
            return list(self._names_for(source._refresh(), label).items())
        self.root.mkdir(parents=True, exist_ok=True)
        with source._folder_lock(), self._folder_lock():
            source._canonical_file_names()
            theirs = source._refresh()
            names = self._names_for(theirs, label)
            renamed = {old: new for old, new in names.items() if old != new}
            for old, new in names.items():
                entry = theirs[old]
                followed = [target for target in entry.targets if target in renamed]
                if followed and entry.unreadable is None:
                    text = entry.content
                    for target in followed:
                        text = rewrite_target(text, target, renamed[target])
                    self._write(new, text)
                    source._path(old).unlink()
                else:
                    os.replace(source._path(old), self._path(new))
            if self.root.parent == source.root.parent:
                write_atomically(source.root / MOVED_FILE, self.root.name)
            self._refresh()
            source._refresh()
        return list(names.items())

    def _names_for(self, theirs: dict[str, _Entry], label: str) -> dict[str, str]:
        """The name each of `theirs` gets here: its own, or `_free_name` when taken."""
        ours = self._refresh()
        taken = set(ours) | set(theirs)
        names: dict[str, str] = {}
        for name in sorted(theirs):
            names[name] = name if name not in ours else _free_name(name, label, taken)
            taken.add(names[name])
        return names

    # ---- internals -----------------------------------------------------------------------------

    def _path(self, name: str) -> Path:
        path = self.root / f"{name}{SUFFIX}"
        # clean_name already refuses separators and "..": this is a second, independent check.
        if path.parent != self.root:
            raise NoteError(f"note name {name!r} resolves outside the notes folder")
        return path

    async def _mutate(self, change: Callable[[dict[str, _Entry]], T]) -> T:
        async with self._write_lock:
            return await asyncio.to_thread(self._mutate_sync, change)

    def _mutate_sync(self, change: Callable[[dict[str, _Entry]], T]) -> T:
        while True:
            with self._index_lock:
                self._follow_moves()
            self.root.mkdir(parents=True, exist_ok=True)
            with self._folder_lock():
                if moved_to(self.root) == self.root:
                    return self._change_locked(change)
            # The notes were moved away while this waited for the lock: change them where they went.

    def _change_locked(self, change: Callable[[dict[str, _Entry]], T]) -> T:
        self._canonical_file_names()
        try:
            return change(self._refresh())
        finally:
            self._refresh()

    def _folder_lock(self) -> AbstractContextManager[None]:
        return folder_lock(self.root)

    def _write(self, name: str, text: str) -> None:
        write_atomically(self._path(name), text)

    def _follow_moves(self) -> None:
        """Point the store at the folder its notes were moved to, if they were (under `_index_lock`)."""
        root = moved_to(self.root)
        if root != self.root:
            log.info("notes of %s are now in %s", self.root, root)
            self.root, self._entries, self._scores = root, {}, None
            self._version += 1

    def _refresh(self) -> dict[str, _Entry]:
        """Bring the index in line with the folder and return a snapshot of it."""
        return self._refresh_versioned()[0]

    def _refresh_versioned(self) -> tuple[dict[str, _Entry], int]:
        with self._index_lock:
            self._follow_moves()
            seen: dict[str, tuple[int, int, int]] = {}
            paths: dict[str, Path] = {}
            for name, path, stamp in self._scan():
                if name not in seen or path.name == f"{name}{SUFFIX}":  # the canonical file wins
                    seen[name], paths[name] = stamp, path
            changed = False
            for name in list(self._entries):
                if name not in seen:
                    del self._entries[name]
                    changed = True
            for name, stamp in seen.items():
                entry = self._entries.get(name)
                if entry is not None and entry.stamp == stamp:
                    continue
                try:
                    data = paths[name].read_bytes()
                except FileNotFoundError:  # removed between scan and read
                    self._entries.pop(name, None)
                    changed = True
                    continue
                content, unreadable = _decode(data)
                self._entries[name] = _Entry(stamp, content, link_targets(content), unreadable)
                changed = True
            if changed:
                self._version += 1
            return dict(self._entries), self._version

    def _scan(self) -> Iterator[tuple[str, Path, tuple[int, int, int]]]:
        """(note name, file, stamp) of every note file; the name is NFC whatever the file's form."""
        try:
            listing = list(os.scandir(self.root))
        except FileNotFoundError:
            return
        for item in listing:
            if not item.name.endswith(SUFFIX):
                continue
            name = unicodedata.normalize("NFC", item.name[: -len(SUFFIX)])
            if not is_valid_name(name):
                continue
            try:
                if not item.is_file():
                    continue
                st = item.stat()
            except FileNotFoundError:
                continue
            yield name, Path(item.path), (st.st_mtime_ns, st.st_size, st.st_ino)

    def _canonical_file_names(self) -> None:
        """Rename note files named in another Unicode form to their NFC name (under the folder lock),
        unless a file of that name exists: then both stay and the NFC one is the note."""
        for name, path, _stamp in list(self._scan()):
            target = self.root / f"{name}{SUFFIX}"
            if path.name != target.name and not target.exists():
                os.replace(path, target)
                log.info("note file %r renamed to its NFC form %r", path.name, target.name)

    def _current_scores(self) -> Scores:
        entries, version = self._refresh_versioned()
        cached = self._scores
        if cached is not None and cached[0] == version:
            return cached[1]
        weights = compute_weights({name: e.targets for name, e in entries.items()})
        scores = [NoteScore(name, weights[name], len(e.content)) for name, e in entries.items()]
        with self._index_lock:
            self._scores = (version, scores)
        return scores


@contextmanager
def folder_lock(root: Path, *, create: bool = True) -> Iterator[None]:
    """Hold the lock of the notes folder `root`: every change of the folder's files, by any process, is
    made under it. `create` makes its lock file if missing; without, the file is only opened for
    reading (which a read-only folder allows), and a missing one raises FileNotFoundError."""
    flags = os.O_RDWR | os.O_CREAT if create else os.O_RDONLY
    fd = os.open(root / LOCK_FILE, flags, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def is_temporary(file_name: str) -> bool:
    """Whether `file_name` is a note write's temporary file (`write_atomically`), not a note."""
    return file_name.startswith(TEMP_PREFIX) and file_name.endswith(TEMP_SUFFIX)


def moved_to(root: Path) -> Path:
    """The folder `root`'s notes are in: `root`, or the sibling folder its `.moved` file names (and
    on, when that one's notes moved too). `.moved` files that lead round in a loop, or on for more
    than `MAX_MOVES` folders, are ignored: the notes are in `root`."""
    seen = [root]
    while True:
        folder = seen[-1]
        try:
            name = (folder / MOVED_FILE).read_text(encoding="utf-8").strip()
        except (FileNotFoundError, NotADirectoryError):
            return folder
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("notes folder %s: unreadable %s (%s); read as it is", folder, MOVED_FILE, exc)
            return folder
        if not name or name in (".", "..") or "/" in name or os.sep in name or "\x00" in name:
            log.warning("notes folder %s: %s names no sibling folder (%r); ignored", folder, MOVED_FILE, name)
            return folder
        following = folder.parent / name
        if following in seen or len(seen) > MAX_MOVES:
            log.warning("notes folder %s: its %s files lead round or on too far; ignored", root, MOVED_FILE)
            return root
        seen.append(following)


def _free_name(name: str, label: str, taken: set[str]) -> str:
    """`<name> (<label>)`, or `<name> (<label> N)`, valid and not in `taken` (the name is shortened
    when the whole would be too long). A label no name can end with (a chat key holding `..`, or too
    long) is `moved` instead. The name is shortened a grapheme at a time, never inside an emoji
    sequence."""
    for usable in (_name_label(label), FALLBACK_LABEL):
        for number in itertools.count(1):
            suffix = f" ({usable})" if number == 1 else f" ({usable} {number})"
            base = name
            while base and not is_valid_name(f"{base}{suffix}"):
                base = base[: grapheme_start(base, len(base) - 1)].rstrip()
            if not base:  # the suffix alone is not valid, nor with a higher number
                break
            candidate = f"{base}{suffix}"
            if candidate not in taken:
                return candidate
    raise AssertionError("unreachable: a one-character name with the fallback label is valid")


def _name_label(label: str) -> str:
    """`label` as the end of a note name: NFC, characters a name may not hold replaced, no `..`, at
    most `LABEL_CHARS` characters."""
    text = unicodedata.normalize("NFC", label)
    text = "".join("_" if ch in "/\\[]" or not ch.isprintable() else ch for ch in text)
    return truncate(re.sub(r"\.{2,}", ".", text), LABEL_CHARS, ellipsis="").strip() or FALLBACK_LABEL


def _decode(data: bytes) -> tuple[str, str | None]:
    """A note file's text (line breaks as `\n`, a UTF-8 BOM dropped) and, when it is not UTF-8, why."""
    try:
        text, unreadable = data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8-sig", errors="replace")
        unreadable = f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
    return text.replace("\r\n", "\n").replace("\r", "\n"), unreadable


def _editable(entries: dict[str, _Entry], name: str) -> str:
    """The content of note `name`, refusing a file that could not be read as UTF-8: writing the
    replacement characters back would destroy its original text."""
    entry = entries[name]
    if entry.unreadable:
        raise NoteError(
            f"note {name!r} {entry.unreadable}; save its file as UTF-8 or replace it with set; "
            "nothing changed"
        )
    return entry.content


def _kept_text(text: str) -> str:
    """`text` as a note keeps it: without NULs and the other control characters (newlines and tabs
    kept), as a message keeps its text (`clean_text`). Raises NoteError for a lone surrogate (refused,
    not dropped: the note is not what was meant) or a note over MAX_NOTE_CHARS."""
    at = lone_surrogate_at(text)
    if at is not None:
        raise NoteError(f"note text is not valid Unicode (a lone surrogate at {at})")
    text = clean_text(text)
    if len(text) > MAX_NOTE_CHARS:
        raise NoteError(f"a note holds at most {MAX_NOTE_CHARS} characters (got {len(text)})")
    return text
