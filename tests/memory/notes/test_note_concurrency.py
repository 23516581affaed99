"""Concurrent writers to one note, in one process and across processes, lose no update."""

import asyncio
import subprocess
import sys
from pathlib import Path

from memory.notes import NoteStore

_APPEND_SCRIPT = """
import asyncio, sys
from pathlib import Path
from memory.notes import NoteStore

async def main() -> None:
    store = NoteStore(Path(sys.argv[1]))
    for i in range(int(sys.argv[3])):
        await store.append("log", f"{sys.argv[2]}-{i}")

asyncio.run(main())
"""


def _names_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def test_concurrent_set_on_one_note_leaves_one_whole_version(tmp_path: Path) -> None:
    first, second = NoteStore(tmp_path), NoteStore(tmp_path)  # two stores: no shared asyncio lock
    contents = [f"version {i} " + "正文" * (50 * i + 1) for i in range(16)]
    await asyncio.gather(*((first if i % 2 else second).set("n", c) for i, c in enumerate(contents)))
    assert await first.get("n") in contents
    assert await second.get("n") == await first.get("n")
    assert _names_in(tmp_path) == [".lock", "n.md"]  # no temp files left


async def test_concurrent_appends_in_one_process_keep_every_line(tmp_path: Path) -> None:
    first, second = NoteStore(tmp_path), NoteStore(tmp_path)
    await asyncio.gather(*((first if i % 2 else second).append("log", f"line {i}") for i in range(30)))
    lines = {line for line in ((await first.get("log")) or "").splitlines() if line}
    assert lines == {f"line {i}" for i in range(30)}


def test_appends_from_two_processes_keep_every_line(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", _APPEND_SCRIPT, str(tmp_path), tag, "15"])
        for tag in ("p", "q")
    ]
    assert [proc.wait(timeout=60) for proc in procs] == [0, 0]
    text = (tmp_path / "log.md").read_text(encoding="utf-8")
    lines = {line for line in text.splitlines() if line}
    assert lines == {f"{tag}-{i}" for tag in ("p", "q") for i in range(15)}
