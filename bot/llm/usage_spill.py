"""LLM usage rows the database refused, kept on disk until it takes them, so that a process killed
meanwhile (SIGKILL, a power cut) does not lose their tokens and budgets do not under-count after it.

A refused row is appended to `<data_dir>/llm_usage_held.jsonl` (one JSON object a line, fsynced before
the ledger goes on; appends are flocked, so two processes never interleave). Writing them into the
database (`write_held`) first renames the file to `llm_usage_held.<time>-<unique>.writing` (under the same
lock: a row appended later goes to a new file), then writes its rows in one transaction that also notes
the file's name in `job_state` (`JOB`), then removes the file. A process killed between the commit and
the removal leaves the file: the next writer finds its name noted and writes nothing of it again, so
each row is counted exactly once; a name is dropped from the note once its file is gone. A line that is
no usage row (cut short by a crash, edited by hand) is left out with a warning naming the file and
line; that file is then kept aside as `llm_usage_held.<time>-<unique>.corrupt` instead of removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from sqlalchemy.dialects.sqlite import insert

from bot.llm.spent import Spent
from memory.models import JobState, LlmUsage
from memory.storage.database import Database

log = logging.getLogger(__name__)

FILE_NAME = "llm_usage_held.jsonl"
WRITING = "llm_usage_held.*.writing"
JOB = "llm_usage_held"
"""The `job_state` row (chat 0) whose data `{"written": [file names]}` notes the files already written."""


def spill(data_dir: Path, rows: Sequence[Spent]) -> None:
    """Append `rows` to the data directory's file of held rows, on disk before returning (OSError when
    it cannot be written)."""
    # ASCII: an error text holding a lone surrogate is escaped, not refused by the encoder
    text = "".join(json.dumps(row.to_json()) + "\n" for row in rows)
    with _locked(data_dir / FILE_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT) as fd:
        data = text.encode("ascii")
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)


def held_rows(data_dir: Path) -> list[Spent]:
    """The rows on disk not yet known to be written (a line that is no row is skipped: `write_held`
    says so when it meets it)."""
    rows: list[Spent] = []
    for path in held_files(data_dir):
        read = _read(path, False)
        rows += read[0] if read is not None else []
    return rows


async def write_held(db: Database, data_dir: Path) -> int:
    """Write the rows held on disk into `db`, each once; returns how many were written. Raises what
    `db.write()` raises when the database refuses them: the files stay for the next try."""
    written = 0
    for path in await asyncio.to_thread(_to_write, data_dir):
        read = await asyncio.to_thread(_read, path, True)
        if read is None:
            continue  # left for a later try
        rows, bad = read
        async with db.write() as session:
            state = await session.get(JobState, (JOB, 0))
            noted = list(state.data.get("written", [])) if state is not None else []
            if path.name not in noted:
                session.add_all(LlmUsage(**row.to_json()) for row in rows)
                written += len(rows)
            kept = [name for name in noted if name != path.name and (data_dir / name).exists()]
            data = {"written": [*kept, path.name]}
            stmt = insert(JobState).values(job=JOB, chat_id=0, cursor=0, last_run=0.0, data=data)
            await session.execute(
                stmt.on_conflict_do_update(
                    index_elements=[JobState.job, JobState.chat_id], set_={"data": data}
                )
            )
        _done_with(path, bad)
    if written:
        log.info("LLM usage held on disk written: %d rows", written)
    return written


def _done_with(path: Path, bad: int) -> None:
    """Remove a held file whose rows are written, or keep it aside when some of its lines were no row.
    Failing to is only logged: its name stays noted, so it is never written again."""
    try:
        if bad:
            aside = path.with_suffix(".corrupt")
            path.replace(aside)
            log.warning(
                "%d lines of held LLM usage could not be read; the file is kept aside as %s", bad, aside
            )
        else:
            path.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("held LLM usage in %s is written but the file stays: %s", path, exc)


def held_files(data_dir: Path) -> list[Path]:
    """The files of held rows: those a write the database refused left renamed (`WRITING`), oldest
    first, then the file rows are appended to."""
    held = data_dir / FILE_NAME
    return sorted(data_dir.glob(WRITING)) + ([held] if held.exists() else [])


def _to_write(data_dir: Path) -> list[Path]:
    """The held files to write: the file of held rows renamed to a `.writing` name of its own (under
    its lock), and those an earlier try left."""
    held = data_dir / FILE_NAME
    with contextlib.suppress(FileNotFoundError), _locked(held, os.O_RDONLY):
        # named in the order they were made, which is the order of their rows
        held.rename(data_dir / f"llm_usage_held.{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.writing")
    return sorted(data_dir.glob(WRITING))


@contextlib.contextmanager
def _locked(path: Path, flags: int) -> Iterator[int]:
    """`path` opened with `flags` and flocked, once it is still the file under that name (another
    process may have renamed it while this one waited for the lock)."""
    while True:
        fd = os.open(path, flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                yield fd
                return
        finally:
            os.close(fd)


def _read(path: Path, warn: bool) -> tuple[list[Spent], int] | None:
    """The rows of a held file and how many of its lines were no row (each named in the log when
    `warn`); None when the file cannot be read (said in the log when `warn`)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        if warn:
            log.warning("held LLM usage in %s cannot be read (left for a later try): %s", path, exc)
        return None
    rows: list[Spent] = []
    bad = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(Spent.from_json(json.loads(line)))
        except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
            bad += 1
            if warn:
                log.warning("%s line %d is no LLM usage row (%s), left out", path, number, exc)
    return rows, bad
