"""Qunyi's notes: a Zettelkasten of markdown files with `[[links]]`, embeds, hints and suggestions."""

from memory.notes.embeds import collapse, expand
from memory.notes.errors import NoteChanged, NoteError, NoteNotFound, PassageNotFound
from memory.notes.hints import format_hints
from memory.notes.links import Link, iter_links, link_targets, rewrite_target
from memory.notes.names import InvalidNoteName, clean_name
from memory.notes.scopes import NOTES_FOLDER, NoteScopes, chat_folder_name
from memory.notes.store import ABSENT, NoteRead, NoteStore, NoteWritten, RenameResult, version_of
from memory.notes.weights import NoteScore, compute_weights

__all__ = [
    "ABSENT",
    "NOTES_FOLDER",
    "InvalidNoteName",
    "Link",
    "NoteChanged",
    "NoteError",
    "NoteNotFound",
    "NoteRead",
    "NoteScopes",
    "NoteScore",
    "NoteStore",
    "NoteWritten",
    "PassageNotFound",
    "RenameResult",
    "chat_folder_name",
    "clean_name",
    "collapse",
    "compute_weights",
    "expand",
    "format_hints",
    "iter_links",
    "link_targets",
    "rewrite_target",
    "version_of",
]
