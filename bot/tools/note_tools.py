"""`note_get`, `note_set`, `note_rename` and `note_hints` over the chat's NoteStore."""

from __future__ import annotations

from pydantic import BaseModel, Field

from bot.tools.registry import MAX_RESULT_CHARS, Tool, ToolContext, ToolError
from memory.notes import NoteChanged, clean_name
from memory.notes.names import MAX_NAME_CHARS
from memory.text import grapheme_start, truncate

MAX_SET_CHARS = 8000
# A page of a long note leaves room under the tool-result cap for the line saying how to read on.
PAGE_CHARS = MAX_RESULT_CHARS - 200
NoteName = Field(min_length=1, max_length=MAX_NAME_CHARS)


class NoteGetArgs(BaseModel):
    name: str = NoteName
    depth: int = Field(default=0, ge=0, le=3)
    offset: int = Field(default=0, ge=0)


class NoteSetArgs(BaseModel):
    name: str = NoteName
    content: str = Field(max_length=MAX_SET_CHARS)


class NoteRenameArgs(BaseModel):
    old: str = NoteName
    new: str = NoteName


class NoteHintsArgs(BaseModel):
    n: int = Field(default=10, ge=1, le=30)


async def _get(ctx: ToolContext, args: NoteGetArgs) -> str:
    """The note, or one page of it: a cut that said nothing would let a model write back half a note."""
    found = await ctx.notes.read(args.name, args.depth)
    ctx.notes_seen[clean_name(args.name)] = found.version
    text = found.text
    if text is None:
        return f"(no note named {args.name.strip()} yet)"
    if args.offset == 0 and len(text) <= MAX_RESULT_CHARS:
        return text
    if args.offset >= len(text):
        return f"(note {args.name.strip()} has only {len(text)} characters)"
    start = grapheme_start(text, args.offset)  # a model may ask for any offset, not only those handed out
    page = truncate(text[start:], PAGE_CHARS, ellipsis="")
    end = start + len(page)
    if end >= len(text):
        return page
    return f"{page}\n[characters {start}–{end} of {len(text)}; read on with offset={end}]"


async def _set(ctx: ToolContext, args: NoteSetArgs) -> str:
    """Write the note; one read with `note_get` through this context (a reply, an MCP session) is
    written on only as it was read: changed since (an admin's edit), nothing is saved."""
    name = clean_name(args.name)
    try:
        written = await ctx.notes.write(name, args.content, base=ctx.notes_seen.get(name))
    except NoteChanged as exc:
        again = "read it again with note_get and make your change to what it holds now"
        raise ToolError(f"{exc}: {again}") from None
    ctx.notes_seen[name] = written.version
    return f"{'created' if written.created else 'updated'} {args.name.strip()}"


async def _rename(ctx: ToolContext, args: NoteRenameArgs) -> str:
    result = await ctx.notes.rename(args.old, args.new)
    verb = "merged into" if result.merged else "renamed to"
    return f"{result.old} {verb} {result.new}; links updated in {len(result.rewritten)} notes"


async def _hints(ctx: ToolContext, args: NoteHintsArgs) -> str:
    names = [s.name for s in await ctx.notes.hints(args.n)]
    return "\n".join(names) if names else "(no notes yet)"


NOTE_TOOLS = [
    Tool(
        "note_get",
        "Read a note. depth>0 expands ![[Name]] embeds. A long note comes in pages: read on with offset.",
        NoteGetArgs,
        _get,
    ),
    Tool(
        "note_set",
        "Create or replace a note. Link with [[Name]], embed with ![[Name]]. One topic per note.",
        NoteSetArgs,
        _set,
        writes=True,
    ),
    Tool(
        "note_rename",
        "Rename a note and update links to it; merges if the new name exists.",
        NoteRenameArgs,
        _rename,
        writes=True,
    ),
    Tool("note_hints", "Names of the most linked notes, to start reading from.", NoteHintsArgs, _hints),
]
