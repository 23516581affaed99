"""FdLines, the stdin reader of `qunyi mcp`: lines as the mcp library's own stdin reader gives them,
and a wait for a line that a cancellation ends."""

import asyncio
import io
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

pytest.importorskip("mcp")

from bot.mcp_stdio import FdLines, claimed_stdin
from tests.waiting import WAIT

# A character split across writes, bad UTF-8, CRLF and a lone CR, a blank line, no final newline.
PIECES = [b'{"q": "\xe4\xb9', b'\x9d\xe6\xba\xaa"}\r', b"\nbad \xff\xfe\n\nold mac\rlast", b" line"]


@contextmanager
def pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    try:
        yield read_end, write_end
    finally:
        for fd in (read_end, write_end):
            try:
                os.close(fd)
            except OSError:
                pass


async def test_lines_are_those_the_librarys_text_wrapper_reads() -> None:
    expected = list(io.TextIOWrapper(io.BytesIO(b"".join(PIECES)), encoding="utf-8", errors="replace"))
    with pipe() as (read_end, write_end):
        lines = FdLines(read_end)
        got = []
        for piece in PIECES:
            os.write(write_end, piece)
            await asyncio.sleep(0)
            got.extend(await _ready(lines))
        os.close(write_end)
        got.extend([line async for line in lines])
    assert got == expected
    assert got[0] == '{"q": "九溪"}\n' and got[-1] == "last line"


async def _ready(lines: FdLines) -> list[str]:
    """The lines complete so far (none when the next one is still being written)."""
    got: list[str] = []
    while True:
        try:
            got.append(await asyncio.wait_for(anext(lines), 0.2))
        except TimeoutError:
            return got


async def test_waiting_for_a_line_is_cancelled_and_reading_goes_on_after() -> None:
    with pipe() as (read_end, write_end):
        lines = FdLines(read_end)
        waiting = asyncio.ensure_future(anext(lines))
        await asyncio.sleep(0)  # the task's first step runs: it now waits for the fd to be readable
        assert not waiting.done()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        os.write(write_end, "周六去九溪\n".encode())
        assert await asyncio.wait_for(anext(lines), WAIT) == "周六去九溪\n"


def test_claimed_stdin_serves_the_wire_privately_and_gives_fd_0_back(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = os.dup(0)
    with pipe() as (read_end, write_end):
        try:
            os.dup2(read_end, 0)
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.FileIO(0, closefd=False)))
            os.write(write_end, b"wire\n")
            with claimed_stdin() as wire:
                assert wire is not None and wire != 0
                assert os.read(0, 16) == b""  # a handler reading stdin gets EOF, not the client's lines
                assert os.read(wire, 16) == b"wire\n"
            os.write(write_end, b"after\n")
            assert os.read(0, 16) == b"after\n"
        finally:
            os.dup2(saved, 0)
            os.close(saved)


def test_a_stdin_without_fd_0_is_left_to_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("{}\n"))
    with claimed_stdin() as wire:
        assert wire is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (r'{"q": "九溪\ud800"}', r'{"q": "九溪\ufffd"}'),
        (r'{"q": "\uDC00x\uD83D"}', r'{"q": "\ufffdx\ufffd"}'),
        (r'{"q": "\ud83d\ude00 a pair"}', r'{"q": "\ud83d\ude00 a pair"}'),
        (r'{"q": "\\ud800 is text"}', r'{"q": "\\ud800 is text"}'),
        (r'{"q": "\\\ud800"}', r'{"q": "\\\ufffd"}'),
        (r'{"q": "\u4e5d"}', r'{"q": "\u4e5d"}'),
    ],
)
async def test_an_escaped_lone_surrogate_is_read_as_a_replacement_character(line: str, expected: str) -> None:
    """The library's parser refused a line escaping a lone surrogate, so its request got no answer."""
    with pipe() as (read_end, write_end):
        os.write(write_end, f"{line}\n{line}".encode())
        os.close(write_end)
        got = [line async for line in FdLines(read_end)]
    assert got == [expected + "\n", expected]
    json.loads(got[1])["q"].encode("utf-8")  # valid Unicode once parsed: no lone surrogate is left
