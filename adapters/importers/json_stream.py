"""Reading a JSON export larger than memory: an outline of the file first, then its messages one by one.

An export is mostly its messages. `read_outline` reads the whole file once and keeps everything but the
message arrays, each replaced by a `MessageArray` (its length and place). That pass finds a syntax error
anywhere in the file before any message is handed out, so a broken file imports nothing, and it gives
the totals the progress bar shows. `stream` then reads the file a second time, handing out one entry
at a time (parsed by ijson's C backend), so memory holds one message, not the file.

Two kinds of file the C parser reads otherwise than json.loads are read more slowly instead: one holding
an integer beyond 64 bits (numbers are then read exactly), and one holding an escaped lone surrogate
(`"\udc00"`, which the C backend cannot decode: the pure-Python backend reads it as json.loads does).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

import ijson
import regex

from adapters.importers.base import ImportFileError, ImportIssue, MessageIterator
from memory.text import truncate
from memory.untrusted_json import TOO_DEEP, too_long_number

MAX_DEPTH = 256
"""Deeper nesting is refused, as json.loads refuses it; no export comes near it."""
EXCERPT_CHARS = 60  # of the text a syntax error points at

_BOM = b"\xef\xbb\xbf"
_STARTS = frozenset({"start_map", "start_array"})
_ENDS = frozenset({"end_map", "end_array"})


@dataclass(slots=True, eq=False)
class MessageArray:
    """Stands in the outline for an array of messages: the ijson prefix of its entries, how many values
    at that prefix come before its first entry in the file, and how many entries it has."""

    prefix: str
    start: int
    count: int = 0


@dataclass(frozen=True, slots=True)
class Outline:
    """A JSON export without its messages, and what the second pass needs to read them."""

    path: Path
    root: Any
    """The top-level object, `MessageArray`s in place of message arrays; a `MessageArray` for a file
    that is one array, when "" is among the arrays asked for; else None if it is no object."""
    mode: _Mode
    stamp: tuple[int, int]
    """The file's size and modification time when the outline was read."""

    @property
    def exact(self) -> bool:
        """Numbers are read as Decimal and turned into floats (a file holding an integer beyond 64 bits)."""
        return not self.mode.use_float


@dataclass(frozen=True, slots=True)
class _Mode:
    """How ijson reads the file: which backend, and whether non-integers come as floats or Decimals."""

    backend: Any
    use_float: bool = True


class StreamBroken(Exception):
    """The file no longer reads as it did in the first pass (changed, cut short or unreadable)."""

    def __init__(self, location: str, reason: str) -> None:
        super().__init__(f"{location}: {reason}")
        self.location = location
        self.reason = reason


class _Overflow(Exception):
    """An integer too large for the C backend's fast number parsing."""


class _Undecodable(Exception):
    """A string the C backend cannot decode (an escaped lone surrogate)."""


def open_export(path: Path) -> BinaryIO:
    """`path` opened for reading bytes, past a UTF-8 byte order mark if it starts with one."""
    handle = path.open("rb")
    if handle.read(len(_BOM)) != _BOM:
        handle.seek(0)
    return handle


def read_outline(path: Path, arrays: Collection[str], keep: Collection[str]) -> Outline:
    """The export at `path` with each array at one of the ijson prefixes `arrays` (`messages`,
    `chats.list.item.messages`, "" for the file itself) replaced by a `MessageArray`, and only the
    top-level keys in `keep`.

    Reads the whole file without keeping its messages. Raises `ImportFileError` if the file cannot be
    read, is not JSON, is nested deeper than `MAX_DEPTH` or gives one of `arrays` twice in an object.
    """
    mode = _Mode(ijson)
    while True:
        try:
            return _outline(path, frozenset(arrays), frozenset(keep), mode)
        except _Overflow:
            mode = _Mode(ijson, use_float=False)
        except _Undecodable:
            mode = _Mode(ijson.get_backend("python"))


def _outline(path: Path, arrays: frozenset[str], keep: frozenset[str], mode: _Mode) -> Outline:
    seen = {_items_of(prefix): 0 for prefix in arrays}  # values at each entry prefix, as ijson.items counts
    stack: list[Any] = []  # the open containers being kept
    steps: list[str] = []  # the ijson prefix of the next value, one step per open container
    depth = skip = 0  # while skip, what is inside the container opened at depth `skip` is not kept
    pending: MessageArray | None = None  # the message array being skipped, counting its entries
    drop_next = False  # the next value is that of a top-level key left out
    begun = False

    def attach(value: Any) -> None:
        parent = stack[-1]
        if type(parent) is list:
            parent.append(value)
        else:
            parent[steps[-1]] = value

    try:
        handle = open_export(path)
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot read: {exc}") from exc
    with handle:
        try:
            stamp = _stamp(handle)
            # basic_parse, not parse: spelling out every event's prefix would double the time
            events = mode.backend.basic_parse(handle, use_float=mode.use_float)
            first = next(events, None)
            begun = True
            root: Any
            if first is not None and first[0] == "start_array" and "" in arrays:
                root = pending = MessageArray(_items_of(""), 0)  # the file is one array of messages
                depth = skip = 1
            elif first is None or first[0] != "start_map":
                return Outline(path, None, mode, stamp)
            else:
                root = {}
                stack.append(root)
                steps.append("")
                depth = 1
            for event, value in events:
                if skip:  # the hot loop: inside a message array (or a value left out)
                    if event == "map_key":
                        continue
                    if event in _ENDS:
                        depth -= 1
                        if depth < skip:
                            skip = 0
                            if pending is not None:
                                seen[pending.prefix] += pending.count
                                pending = None
                        continue
                    if depth == skip and pending is not None:
                        pending.count += 1
                    if event in _STARTS:
                        depth += 1
                        if depth > MAX_DEPTH:
                            raise ImportFileError(f"{path}: not valid JSON: {TOO_DEEP}")
                    continue
                if event == "map_key":
                    steps[-1] = value
                    # a key left out must not hold entries ijson.items would count ("a.b" holds "a.b.item")
                    drop_next = (
                        depth == 1 and value not in keep and not any(p.startswith(f"{value}.") for p in seen)
                    )
                    continue
                if event in _ENDS:
                    depth -= 1
                    stack.pop()
                    steps.pop()
                    continue
                prefix = ".".join(steps)
                if prefix in arrays and type(stack[-1]) is dict and steps[-1] in stack[-1]:
                    raise ImportFileError(_repeated(path, steps[-1], prefix))
                if prefix in seen:
                    seen[prefix] += 1
                if event in _STARTS:
                    depth += 1
                    if depth > MAX_DEPTH:
                        raise ImportFileError(f"{path}: not valid JSON: {TOO_DEEP}")
                    if drop_next:
                        skip = depth
                    elif event == "start_array" and prefix in arrays:
                        pending = MessageArray(_items_of(prefix), seen[_items_of(prefix)])
                        attach(pending)
                        skip = depth
                    else:
                        container: Any = {} if event == "start_map" else []
                        attach(container)
                        stack.append(container)
                        steps.append("" if event == "start_map" else "item")
                elif not drop_next:
                    attach(float(value) if type(value) is Decimal else value)
                drop_next = False
        except ijson.JSONError as exc:
            error, near = _parse_error(exc)
            if mode.use_float and error == "parse error: integer overflow":
                raise _Overflow from None
            if not begun:
                what = "the file is empty" if error == "parse error: premature EOF" else error + near
                raise ImportFileError(f"{path}: not valid JSON: {what}") from None
            read = sum(seen.values())
            if pending is not None:
                read += pending.count - (depth > skip)  # the entry being read when it broke is not counted
            raise ImportFileError(_broken(path, error, near, handle, read)) from None
        except UnicodeDecodeError as exc:  # the C backend on an escaped lone surrogate
            if mode.backend.backend_name == "python":
                raise ImportFileError(f"{path}: not valid JSON: {exc}") from None
            raise _Undecodable from None
        except OSError as exc:
            raise ImportFileError(f"{path}: cannot read: {exc}") from exc
        except ImportFileError:
            raise
        except (ValueError, SystemError) as exc:
            if not _number_too_long(exc):
                raise
            raise ImportFileError(f"{path}: not valid JSON: {too_long_number()}") from None
    return Outline(path, root, mode, stamp)


def _items_of(prefix: str) -> str:
    """The ijson prefix of the entries of the array at `prefix` ("" for a file that is one array)."""
    return f"{prefix}.item" if prefix else "item"


def _number_too_long(exc: Exception) -> bool:
    """Whether the parser failed on an integer of more digits than int() reads: the C backend raises
    int()'s ValueError, or, when that happens in the first buffer it reads, a SystemError caused by it."""
    return isinstance(exc, ValueError) or isinstance(exc.__cause__, ValueError)


def _broken(path: Path, error: str, near: str, handle: BinaryIO, read: int) -> str:
    """The one-line error for a file that breaks off or goes wrong after `read` message entries."""
    entries = f"{read:,} message entr{'y' if read == 1 else 'ies'}"
    if error == "parse error: premature EOF":
        what = f"not valid JSON: the file ends in the middle, after {entries} (cut short?)"
    else:
        where = f"before byte {handle.tell():,}, after {entries}"
        if error == "lexical error: invalid bytes in UTF8 string":
            what = f"not UTF-8 text ({where})"
        else:
            what = f"not valid JSON: {error}{near} ({where})"
    return f"{path}: {what}; nothing was imported"


def _repeated(path: Path, key: str, prefix: str) -> str:
    """The one-line error for a message array's key given twice in one object (json.loads keeps the last,
    dropping the messages of the other unsaid)."""
    return (
        f"{path}: not a usable export: the key {key!r} appears twice in one object (at {prefix}), "
        "so which messages it holds is unclear; nothing was imported"
    )


def _parse_error(exc: ijson.JSONError) -> tuple[str, str]:
    """The parser's message on one line (yajl's first line), and ` near '…'` for the text it points at."""
    text = exc.args[0] if exc.args else exc
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = [line.strip() for line in str(text).splitlines()]
    if not lines:
        return type(exc).__name__, ""
    near = ""
    if len(lines) > 1 and lines[1] and not lines[1].startswith("(right here)"):
        near = f" near {_excerpt(lines[1])!r}"
    return lines[0].rstrip("."), near


# Marks that belong to the character before them, which the excerpt does not hold.
_DANGLING = regex.compile(r"^[\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=ZWJ}]+")


def _excerpt(bytes_read: str) -> str:
    """The text yajl shows around an error, from whole characters only: its window of bytes may start
    or end inside a character (decoded as U+FFFD) or start inside an emoji sequence."""
    return truncate(_DANGLING.sub("", bytes_read.strip("\ufffd")), EXCERPT_CHARS)


def _stamp(handle: BinaryIO) -> tuple[int, int]:
    status = os.fstat(handle.fileno())
    return status.st_size, status.st_mtime_ns


class EntryReader:
    """The entries of an outline's message arrays, read in a second pass over the file.

    Arrays are read in the order asked for; asking for an earlier one than the last starts the pass over.
    """

    def __init__(self, outline: Outline) -> None:
        self._outline = outline
        self._handle: BinaryIO | None = None
        self._items: Iterator[Any] = iter(())
        self._prefix = ""
        self._position = 0

    def __enter__(self) -> EntryReader:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the file of the pass under way, if any."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def entries(self, array: MessageArray, where: str) -> Iterator[Any]:
        """The entries of `array` (at `<where>messages`) one by one, as json.loads would give them.

        Raises `StreamBroken` if the file no longer holds them where the outline found them.
        """
        if not array.count:
            return
        if self._handle is None or self._prefix != array.prefix or self._position > array.start:
            self._restart(array.prefix, f"{where}messages[0]")
        while self._position < array.start:
            self._next(f"{where}messages[0]")
        for index in range(array.count):
            entry = self._next(f"{where}messages[{index}]")
            yield _floats(entry) if self._outline.exact else entry

    def _restart(self, prefix: str, location: str) -> None:
        self.close()
        try:
            self._handle = open_export(self._outline.path)
            if _stamp(self._handle) != self._outline.stamp:
                raise StreamBroken(location, _changed("the file changed after it was checked"))
        except OSError as exc:
            raise StreamBroken(location, _changed(f"cannot read the file again: {exc}")) from None
        mode = self._outline.mode
        self._items = mode.backend.items(self._handle, prefix, use_float=mode.use_float)
        self._prefix, self._position = prefix, 0

    def _next(self, location: str) -> Any:
        try:
            entry = next(self._items)
        except StopIteration:
            raise StreamBroken(location, _changed("the file ends sooner than when it was checked")) from None
        except ijson.JSONError as exc:
            error, near = _parse_error(exc)
            raise StreamBroken(location, _changed(f"not valid JSON any more: {error}{near}")) from None
        except UnicodeDecodeError as exc:
            raise StreamBroken(location, _changed(f"not valid JSON any more: {exc}")) from None
        except OSError as exc:
            raise StreamBroken(location, _changed(f"cannot read: {exc}")) from None
        self._position += 1
        return entry


def _changed(reason: str) -> str:
    return f"{reason}; this entry and all after it were not imported (import the file again)"


def _floats(value: Any) -> Any:
    """`value` with the Decimals of an exact read as floats (json.loads's types); depth <= MAX_DEPTH."""
    if type(value) is Decimal:
        return float(value)
    if type(value) is dict:
        return {key: _floats(item) for key, item in value.items()}
    if type(value) is list:
        return [_floats(item) for item in value]
    return value


def stream(outline: Outline, messages: Callable[[EntryReader], MessageIterator]) -> MessageIterator:
    """Run `messages(reader)` over a second pass of the outline's file and yield what it yields.

    If the file stops reading as it did (changed or cut short since the outline), the import ends with
    an `ImportIssue` at the entry where it happened; everything before it has been yielded.
    """
    with EntryReader(outline) as reader:
        try:
            yield from messages(reader)
        except StreamBroken as exc:
            yield ImportIssue(str(outline.path), exc.location, exc.reason)
