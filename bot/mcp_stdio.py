"""MCP's stdio transport with stdin read on the event loop, so that stopping the server needs no thread.

`mcp.server.stdio.stdio_server()` reads stdin in a worker thread (anyio's `wrap_file`), and a
cancellation waits for that thread's `readline`: Ctrl-C or SIGTERM left `qunyi mcp` running until its
client sent a line or closed stdin. Here stdin is read without blocking, from the loop, and its lines
are handed to `stdio_server(stdin=…)`, which keeps everything else the library's: the line framing
and decoding (UTF-8, bad bytes replaced, universal newlines), the JSON-RPC parsing (an invalid line
reaches the session as an exception), the stdout writer, and the diversion of fds 0 and 1 while
serving (stray reads get EOF, stray prints miss the wire).
"""

from __future__ import annotations

import asyncio
import codecs
import io
import os
import re
import sys
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, cast

import anyio
from mcp.server.stdio import stdio_server

if TYPE_CHECKING:
    from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream
    from mcp.shared.message import SessionMessage

CHUNK_BYTES = 65536

# A JSON escape of a lone surrogate (`"\ud800"`) makes the library's parser refuse the whole line, so a
# request holding one got no answer at all; it is read as U+FFFD, as a bad byte is. Escaped backslashes
# and surrogate pairs are matched first so that they are left as they are.
_ESCAPES = re.compile(
    r"\\\\"  # an escaped backslash
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # a surrogate pair
    r"|(?P<lone>\\u[dD][89a-fA-F][0-9a-fA-F]{2})"
)
_REPLACEMENT = "\\ufffd"


def without_lone_surrogates(line: str) -> str:
    """`line` with every JSON escape of a lone surrogate written as one of U+FFFD."""
    if "\\u" not in line:
        return line
    return _ESCAPES.sub(lambda m: _REPLACEMENT if m["lone"] else m[0], line)


class FdLines:
    """The text lines of file descriptor `fd`, waited for on the event loop: a wait for the next line
    is cancelled at once. Decoded as the library decodes stdin, so a line ends with "\\n" (a "\\r\\n"
    or lone "\\r" becoming one) and the last one may not; an escaped lone surrogate is read as U+FFFD
    (`without_lone_surrogates`).

    The fd is left blocking (its flags are shared with whoever else holds it, a terminal's with the
    shell and with stdout) and read only once the loop says it is readable."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._pollable = True  # until the loop refuses to watch it
        self._decoder = io.IncrementalNewlineDecoder(
            codecs.getincrementaldecoder("utf-8")(errors="replace"), translate=True
        )
        self._lines: deque[str] = deque()
        self._rest = ""  # text after the last newline read
        self._ended = False

    def __aiter__(self) -> FdLines:
        return self

    async def __anext__(self) -> str:
        while not self._lines:
            if self._ended:
                if not self._rest:
                    raise StopAsyncIteration
                line, self._rest = self._rest, ""
                return without_lone_surrogates(line)
            chunk = await self._read()
            self._ended = not chunk
            *complete, self._rest = (self._rest + self._decoder.decode(chunk, final=self._ended)).split("\n")
            self._lines.extend(without_lone_surrogates(line) + "\n" for line in complete)
        return self._lines.popleft()

    async def _read(self) -> bytes:
        """The next bytes, b"" at the end, once the loop says there are some. A regular file or the
        null device cannot be watched (epoll refuses them), and is read at once: it never waits."""
        if self._pollable:
            loop = asyncio.get_running_loop()
            readable = loop.create_future()
            try:
                loop.add_reader(self.fd, _settle, readable)
            except OSError:
                self._pollable = False
            else:
                try:
                    await readable
                finally:
                    loop.remove_reader(self.fd)
        return os.read(self.fd, CHUNK_BYTES)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


@contextmanager
def claimed_stdin() -> Iterator[int | None]:
    """This process's stdin wire on a private duplicate while serving, fd 0 pointed at the null device
    so that handlers and children read EOF (as `stdio_server()` does with its own claim); fd 0 is
    restored on exit. None when stdin is not backed by fd 0 (a test's), or it cannot be claimed."""
    try:
        backed = sys.stdin is not None and sys.stdin.fileno() == 0
    except (OSError, ValueError, io.UnsupportedOperation):
        backed = False
    if not backed:
        yield None
        return
    try:
        wire = os.dup(0)
    except OSError:
        yield None
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
            diverted = True
        finally:
            os.close(null)
    except OSError:
        diverted = False  # served as it is: fd 0 still carries the wire
    try:
        yield wire
    finally:
        if diverted:
            os.dup2(wire, 0)
        os.close(wire)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[
    tuple[ContextReceiveStream[SessionMessage | Exception], ContextSendStream[SessionMessage]]
]:
    """The read and write streams of `stdio_server()` on this process's stdin and stdout, with stdin
    read on the loop; a stdin that is not fd 0 (a test's) is left to the library."""
    with claimed_stdin() as wire:
        if wire is None:
            async with stdio_server() as streams:
                yield streams
            return
        # stdio_server iterates its stdin's lines and nothing more: FdLines stands in for the AsyncFile.
        async with stdio_server(stdin=cast(anyio.AsyncFile[str], FdLines(wire))) as streams:
            yield streams
